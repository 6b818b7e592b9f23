"""The benchmark: a realistic dataset at scale, and every hot path measured beside its floor.

``data`` builds the dataset with set-based SQL (``manage.py bench_data``); ``paths`` is the
one table of what is measured; ``run`` starts gunicorn and a Celery worker against the data,
drives them from a bounded async client on loopback and writes ``docs/benchmarks.md``
(``manage.py bench``). Tooling, not domain code: it lives beside ``devserver`` and
``screenshots``. The dataset is written with SQL rather than through the write functions
(a million gated writes would take hours); what the benchmark itself sends goes through the
app like any agent's or person's request.
"""
