"""A `manage.py demo` process on a saved state of its own, for the tests that run the demo."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
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


def demo_env(state: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "PORT"}}
    return env | {"STOMP_URL": "memory://", "DOVECOTE_DEMO": "true", "DOVECOTE_PUSH_ALLOW_HOSTS": "127.0.0.1",
                  "DOVECOTE_LOG_LEVEL": "ERROR", "DOVECOTE_SQLITE_PATH": str(state / "demo.sqlite3"),
                  "DJANGO_SETTINGS_MODULE": "dovecote.settings"}


@dataclass
class Demo:
    """A `manage.py demo` process on a saved state, started from a working directory of its own."""

    process: subprocess.Popen
    log: Path
    port: int

    @classmethod
    def start(cls, state: Path, port: int, *options: str, rate: float = 5) -> Demo:
        workdir = state.parent / "cwd"
        workdir.mkdir(exist_ok=True)
        log = state.parent / f"demo-{port}-{time.monotonic_ns()}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "demo", "--port", str(port),
                                        "--rate", str(rate), *options], cwd=workdir, env=demo_env(state),
                                       stdout=out, stderr=subprocess.STDOUT)
        return cls(process, log, port)

    def banner(self, name: str, timeout: float = 60) -> str:
        """Wait until the demo printed `name:` and its web server answers; return what follows the name."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()
            lines = [line for line in self.log.read_text().splitlines() if line.strip().startswith(f"{name}:")]
            if lines and answers(f"http://127.0.0.1:{self.port}/healthz/"):
                return lines[0].split(":", 1)[1].strip()
            time.sleep(0.2)
        raise AssertionError(f"the demo did not start in {timeout} s:\n{self.log.read_text()}")

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(timeout=20)
        return self.log.read_text()

    def finish(self, timeout: float = 20) -> tuple[int, str]:
        """Wait for a demo that is expected to stop by itself; return its exit status and output."""
        return self.process.wait(timeout=timeout), self.log.read_text()


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False


