"""bin/web's access log (granian's, in DOVECOTE_LOG_FORMAT's format) goes where WEB_ACCESS_LOG says: a file
(one key=value record per request, the request line without its query string), or nowhere when it is empty."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import requests
from django.conf import settings

from tests import workers
from tests.demo_process import free_port
from tests.run_processes import BinProcess

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("live_services")]


def serve_one_request(tmp_path: Path, access_log: str) -> str:
    """Run bin/web with WEB_ACCESS_LOG=`access_log`, GET /healthz/live?probe=secret once, stop it; return its output."""
    port = free_port()
    env = {**os.environ, "DATABASE_URL": workers.test_database_url(), "STOMP_URL": settings.STOMP_URL,
           "CELERY_BROKER_URL": settings.CELERY_BROKER_URL, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
           "PORT": str(port), "WEB_WORKERS": "1", "WEB_ACCESS_LOG": access_log, "DOVECOTE_LOG_FORMAT": "keyvalue"}
    web = BinProcess("web", env, tmp_path)
    try:
        web.wait_until_serving(f"http://127.0.0.1:{port}/healthz/live")
        reply = requests.get(f"http://127.0.0.1:{port}/healthz/live?probe=secret", timeout=30)
        assert reply.status_code == 200, reply.text
    finally:
        web.stop()
        workers.close_other_sessions()
    assert web.process.returncode == 0, web.text()
    return web.text()


def test_the_access_log_goes_to_the_file_it_names_one_record_per_request(tmp_path: Path) -> None:
    access_log = tmp_path / "access.log"
    output = serve_one_request(tmp_path, str(access_log))
    lines = access_log.read_text().splitlines()
    assert lines and all(line.startswith("ts=") and " logger=granian.access " in line for line in lines), lines
    assert sum('msg="127.0.0.1 \\"GET /healthz/live HTTP/1.1\\" 200 ' in line for line in lines) >= 1, lines
    assert "secret" not in access_log.read_text()
    assert "granian.access" not in output, output
    assert "logger=_granian " in output, output  # granian's own log stays on standard error


def test_an_empty_WEB_ACCESS_LOG_writes_no_access_log(tmp_path: Path) -> None:
    output = serve_one_request(tmp_path, "")
    assert "granian.access" not in output and "/healthz/live" not in output, output
    assert "Granian shutdown completed" in output, output
