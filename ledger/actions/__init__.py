"""The only code that changes tracked models.

Each function takes keyword arguments, checks the policy, records who and why, saves
the row and its history in one transaction, and schedules side effects on commit.
Views, the API, the admin, tasks and commands call these; nothing else saves a tracked
model (``tests/test_write_boundary.py`` checks it). ``_tracking`` is private to the package.
"""
