"""State documents: the shape a compaction must have (``schema``), the checks that hold a
document to that shape (``checks``), and what changed between two generations (``diff``).

Pure functions throughout: no queries, no writes.
"""
