#!/usr/bin/env bash
# Install the Debian tools the test suite drives (idempotent; apt only when something is missing).
#   docker-compose  validates docker-compose.yml (`config -q`); no Docker engine is needed or installed
set -euo pipefail

missing=()
if ! command -v docker-compose >/dev/null && ! docker compose version >/dev/null 2>&1; then
  missing+=(docker-compose)
fi
if ((${#missing[@]})); then
  echo "test-tools: installing ${missing[*]}" >&2
  if [[ ! -d /var/lib/apt/lists/partial || -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v lock)" ]]; then
    apt-get update -qq
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
fi
