"""`make demo`'s entry point: one process, no services, and within 30 s deliveries, retries and dead letters."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get_json(url: str, key: str) -> dict:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)


def test_the_demo_delivers_retries_and_dead_letters_within_30_seconds(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    env |= {"STOMP_URL": "memory://", "DOVECOTE_DEMO": "true", "DOVECOTE_PUSH_ALLOW_HOSTS": "127.0.0.1",
            "DOVECOTE_LOG_LEVEL": "ERROR",
            "DOVECOTE_SQLITE_PATH": str(tmp_path / "demo.sqlite3"), "DJANGO_SETTINGS_MODULE": "dovecote.settings"}
    log = tmp_path / "demo.log"
    with open(log, "wb") as out:
        demo = subprocess.Popen([sys.executable, "manage.py", "demo", "--port", str(port), "--rate", "5"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        key = wait_for_banner(log, demo, port)
        base = f"http://127.0.0.1:{port}/api/v1/messages/"
        deadline = time.monotonic() + 30
        seen: dict[str, bool] = {}
        while time.monotonic() < deadline and len(seen) < 3:
            rows = get_json(f"{base}?page_size=500", key)["results"]
            for row in rows:
                if row["status"] == "delivered":
                    seen["delivered"] = True
                if row["status"] == "dead_lettered":
                    seen["dead_lettered"] = True
                if row["attempts"] >= 2:
                    seen["retried"] = True
            time.sleep(0.5)
        assert seen == {"delivered": True, "dead_lettered": True, "retried": True}, log.read_text()[-2000:]
        assert get_json(f"http://127.0.0.1:{port}/healthz/", key)["status"] == "ok"
    finally:
        demo.send_signal(signal.SIGINT)
        demo.wait(timeout=20)
    assert "Dovecote demo stopped." in log.read_text()


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False


def wait_for_banner(log: Path, demo: subprocess.Popen, port: int, timeout: float = 60) -> str:
    """Wait until the demo prints its API key, and its web server answers; return the key."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert demo.poll() is None, log.read_text()
        lines = [line for line in log.read_text().splitlines() if line.strip().startswith("API key:")]
        if lines and answers(f"http://127.0.0.1:{port}/healthz/"):
            return lines[0].split()[-1]
        time.sleep(0.2)
    raise AssertionError(f"the demo did not start in {timeout} s:\n{log.read_text()}")
