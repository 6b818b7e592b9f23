"""The benchmark: a realistic dataset at scale, and every hot path measured beside its floor.

``data`` builds the dataset with set-based SQL (``python -m tools.bench data``), from
``vocabulary``'s names and word lists, by ``builder``'s steps; ``paths`` is
the one table of what is measured; ``run`` starts gunicorn and a Celery worker against the
data, drives them from a bounded async client on loopback and writes ``docs/benchmarks.md``
(``python -m tools.bench run``); ``commands`` holds both commands. Tooling, not domain code:
it lives beside ``devserver`` and ``screenshots`` in ``tools/``, which is not packaged and
which nothing in ``ledger`` or ``memoryadmin`` imports. The dataset is written with SQL rather
than through the write functions (a million gated writes would take hours); what the
benchmark itself sends goes through the app like any agent's or person's request.
"""
