# Dovecote: see README for what each target does on a fresh machine.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV        := .venv
PY          := $(VENV)/bin/python
STAMP       := $(VENV)/.installed
NODE_STAMP  := node_modules/.package-lock.json
PYTEST_ARGS ?=
# Every target serves plain HTTP on this machine, so production's HTTPS-only settings are relaxed
# (docs/security.md#local-runs); a caller's own DOVECOTE_HTTPS wins.
export DOVECOTE_HTTPS ?= false

# Export what a checkout adds to the environment (var/services.env, the caller's variables winning):
# the one loader, dovecote/checkout.py, which every Django process (manage.py, web, worker, beat) also
# runs itself; targets whose shell or harness reads the variables before Django starts use this.
LOAD_SERVICES_ENV = eval "$$($(PY) -m dovecote.checkout)"

.PHONY: help demo demo-reset api-key superuser venv assets services test screenshots run release migrate report \
	lint bench client

# help: list the targets.
help:
	@echo "make demo      run everything in one process with demo data (no services needed)"
	@echo "make demo-reset  the same, from a fresh state (database and login)"
	@echo "make api-key   print a new admin API key for the Dovecote running here (demo or run)"
	@echo "make superuser create a Django superuser for make run's web UI and /admin/ (DJANGO_SUPERUSER_* set: no questions)"
	@echo "make venv      create .venv (Python >= 3.12) and install requirements.txt and requirements-dev.txt"
	@echo "make assets    install the web UI's npm packages (htmx) into node_modules; make venv does it"
	@echo "make services  start PostgreSQL, Redis and Apache Artemis (STOMP) if needed; print the URLs"
	@echo "make test      venv + services, then the whole test suite (PYTEST_ARGS=... to pass options)"
	@echo "make screenshots  regenerate docs/screenshots/*.png (the web UI at 1280x800) from the browser tests"
	@echo "make run       migrate and collect the static files, then web, WORKER_PROCESSES workers (2) and beat from the Procfile (Ctrl-C stops all)"
	@echo "make release   what runs before make run's processes: migrations and collectstatic"
	@echo "make migrate   apply database migrations against DATABASE_URL (or var/services.env)"
	@echo "make report    migrate, then run the Spark report jobs (REPORT_ARGS=\"--full\" etc.)"
	@echo "make lint      ruff, the import contracts (lint-imports) and the type checker (mypy); make test runs it"
	@echo "make client    regenerate clients/openapi.yaml and the Python client generated from it"
	@echo "make bench     the benchmark table against the real services (QUICK=1, PROFILE=1, BENCH_ARGS=...)"
	@echo "make help      this list"

# demo: everything in one process (SQLite, in-memory broker, in-process worker and beat), no services;
# PORT (default 8000) is its port. It binds the port before touching its saved state (var/), so a
# second `make demo` while one runs stops at once and changes nothing.
DEMO_ENV = env -u DATABASE_URL -u CELERY_BROKER_URL STOMP_URL=memory:// DOVECOTE_DEMO=true \
	DOVECOTE_PUSH_ALLOW_HOSTS=127.0.0.1 DOVECOTE_LOG_LEVEL=ERROR
demo: venv
	@$(DEMO_ENV) $(PY) manage.py demo

# demo-reset: the demo from a fresh state: once it holds its port and no other demo uses the state, it
# deletes its SQLite file, its saved login and any var/celerybeat-schedule* file, then runs.
demo-reset: venv
	@$(DEMO_ENV) $(PY) manage.py demo --reset

# api-key: print a new admin API key (NAME=… names it) for the Dovecote running from this directory:
# the demo's while `make demo` runs, else make run's (DATABASE_URL, or var/services.env).
NAME ?= cli
api-key: venv
	@if $(DEMO_ENV) $(PY) manage.py demo --running; then \
	  $(DEMO_ENV) $(PY) manage.py create_api_key --name "$(NAME)" --admin | tail -1; \
	else \
	  $(PY) manage.py create_api_key --name "$(NAME)" --admin | tail -1; \
	fi

# superuser: a Django superuser (staff, every permission) in make run's database, for the web UI and
# /admin/; it asks for the name and password, or, with DJANGO_SUPERUSER_USERNAME, DJANGO_SUPERUSER_EMAIL
# and DJANGO_SUPERUSER_PASSWORD set, asks nothing (Django's createsuperuser --no-input).
superuser: venv
	@$(PY) manage.py createsuperuser $(if $(DJANGO_SUPERUSER_PASSWORD),--no-input)

# venv: the virtualenv with what Dovecote runs (requirements.txt) and the test tools
# (requirements-dev.txt), rebuilt when either changes (a warm run does nothing), and the web UI's
# front-end packages. The Docker image installs requirements.txt alone.
venv: $(STAMP) assets

# assets: the web UI's npm packages (htmx), installed exactly as package-lock.json says into
# node_modules, which settings.STATICFILES_DIRS serves from; nothing of them is committed.
assets: $(NODE_STAMP)

$(NODE_STAMP): package.json package-lock.json
	@command -v npm >/dev/null || { echo "npm is needed for the web UI's packages (Debian: apt-get install npm)" >&2; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The Python client and the receiver kit, installed editable: their tests import them from here.
LOCAL_PACKAGES := clients/python receivers/python

$(STAMP): requirements.txt requirements-dev.txt $(addsuffix /pyproject.toml,$(LOCAL_PACKAGES))
	@python=$$(bash scripts/find-python); \
	if ! $(PY) -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then \
	  echo "creating $(VENV) with $$python"; \
	  rm -rf $(VENV); \
	  "$$python" -m venv $(VENV); \
	fi
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps $(addprefix -e ,$(LOCAL_PACKAGES))
	@touch $@

# services: the local real services (idempotent); prints `export KEY=VALUE` lines.
services:
	@bash scripts/services.sh

# test: lint first (it needs no service), then everything the suite needs, then pytest with the
# services' environment (yours wins). The suite's settings (tests/settings.py, named in
# pyproject.toml) use their own Redis database.
test: lint services
	@scripts/test-tools.sh
	@$(LOAD_SERVICES_ENV); \
	$(VENV)/bin/pytest --durations=30 $(PYTEST_ARGS)

# bench: the benchmark table (real services, a scratch database); QUICK=1 for a small run; PROFILE=1
# samples the web and worker processes with py-spy and prints where their CPU went (bench/profile.py).
bench: venv services
	@scripts/test-tools.sh
	@$(LOAD_SERVICES_ENV); $(PY) -m bench.run $(if $(QUICK),--quick) $(if $(PROFILE),--profile) $(BENCH_ARGS)

# screenshots: the browser tests with SCREENSHOTS=1 write each page to docs/screenshots/ (1280×800).
screenshots: venv services
	@scripts/test-tools.sh
	@$(LOAD_SERVICES_ENV); \
	SCREENSHOTS=1 $(VENV)/bin/pytest -q tests/browser

# release: what runs once before the processes start: migrations, and the static files collected
# (hashed and gzipped) into staticfiles/ for WhiteNoise to serve.
release: venv
	@$(PY) manage.py migrate --no-input && $(PY) manage.py collectstatic --no-input --verbosity 0

# migrate: apply migrations (the same as release, for use on its own).
migrate: release

# run: the full stack in the foreground; Ctrl-C or SIGTERM stops every process.
run: release
	@mkdir -p var; export PATH="$(CURDIR)/$(VENV)/bin:$$PATH"; \
	exec $(VENV)/bin/honcho start -f Procfile --port "$${PORT:-8000}" -c "worker=$${WORKER_PROCESSES:-2}"

# report: the Spark report jobs against DATABASE_URL (or var/services.env); the hours changed since
# the last run, or REPORT_ARGS="--full", "--since … --until …", "--master spark://host:7077".
REPORT_ARGS ?=
report: release
	@scripts/test-tools.sh
	@export PATH="$(CURDIR)/$(VENV)/bin:$$PATH"; \
	$(PY) manage.py run_reports $(REPORT_ARGS)

# client: the OpenAPI schema (clients/openapi.yaml) and the Python client generated from it by the pinned
# openapi-python-client (clients/python/dovecote_api/); the suite fails while the committed ones are stale.
client: venv
	@scripts/generate-python-client.sh

# lint: ruff (its rule set in pyproject.toml), the import graph's contracts (lint-imports, [tool.importlinter]:
# apps import downwards, no cycle) and mypy on the packages [tool.mypy] names. Any finding fails it.
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy
