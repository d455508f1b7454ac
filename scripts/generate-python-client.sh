#!/usr/bin/env bash
# Regenerate the OpenAPI schema (clients/openapi.yaml) and the typed Python client generated from it
# (clients/python/dovecote_api/) with the pinned openapi-python-client. `make client` runs this;
# tests/clients/test_python_client_is_current.py runs it with a temporary DEST and compares the trees.
#
#   scripts/generate-python-client.sh [DEST]     (DEST defaults to clients/, the committed copy)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=$(realpath -m "${1:-clients}")
mkdir -p "$dest/python"
export PATH="$PWD/.venv/bin:$PATH"   # openapi-python-client's post hooks run ruff from PATH

# The schema needs no database or broker: embedded defaults are enough.
env -u DATABASE_URL DOVECOTE_ENV_FILE= DOVECOTE_HTTPS=false DJANGO_SETTINGS_MODULE=dovecote.settings STOMP_URL=memory:// CELERY_BROKER_URL=memory:// \
  python manage.py spectacular --validate --fail-on-warn --file "$dest/openapi.yaml"
openapi-python-client generate --path "$dest/openapi.yaml" --meta none --overwrite --fail-on-warning \
  --config clients/python/openapi-python-client.yaml --output-path "$dest/python/dovecote_api" >/dev/null
echo "generated $dest/openapi.yaml and $dest/python/dovecote_api"
