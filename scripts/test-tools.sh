#!/usr/bin/env bash
# Install the Debian tools the test suite drives (idempotent; apt only when something is missing).
#   docker-compose           validates docker-compose.yml (`config -q`); no Docker engine is needed or installed
#   openjdk-17-jre-headless  the JVM PySpark starts (the analytics jobs and their tests)
#   libpostgresql-jdbc-java  the PostgreSQL JDBC driver Spark reads and writes with (/usr/share/java/postgresql.jar)
#   wrk                      the fastest HTTP client on the machine: `make bench`'s raw-POST reference
#   nghttp2-client           h2load, `make bench`'s closed-loop load (single publishes, the empty endpoint): in C, a
#                            fifth of the CPU a request of a Python client on the cores the stack runs on
#   prometheus               for promtool, which checks deploy/prometheus/ (the scrape config and the alert rules)
#   chromium                 the browser Playwright drives for the web UI's tests (/usr/bin/chromium; never downloaded),
#                            with fonts-dejavu-core and fonts-liberation so pages and screenshots render the same everywhere
set -euo pipefail

missing=()
if ! command -v docker-compose >/dev/null && ! docker compose version >/dev/null 2>&1; then
  missing+=(docker-compose)
fi
if ! command -v java >/dev/null; then
  missing+=(openjdk-17-jre-headless)
fi
if [[ ! -f /usr/share/java/postgresql.jar ]]; then
  missing+=(libpostgresql-jdbc-java)
fi
if ! command -v wrk >/dev/null; then
  missing+=(wrk)
fi
if ! command -v h2load >/dev/null; then
  missing+=(nghttp2-client)
fi
if ! command -v promtool >/dev/null; then
  missing+=(prometheus)
fi
if [[ ! -x /usr/bin/chromium ]]; then
  missing+=(chromium fonts-dejavu-core fonts-liberation)
fi
if ((${#missing[@]})); then
  echo "test-tools: installing ${missing[*]}" >&2
  if [[ ! -d /var/lib/apt/lists/partial || -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v lock)" ]]; then
    apt-get update -qq
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
fi
