"""Start real Celery worker processes (with beat) against the test database."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def test_database_url() -> str:
    db = settings.DATABASES["default"]
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


class WorkerProcess:
    """A `celery worker -B` subprocess; its log is kept for the failure report."""

    def __init__(self, log_dir: Path, name: str, env: dict[str, str] | None = None, nofile: int | None = None) -> None:
        self.log_path = log_dir / f"{name}.log"
        full_env = {
            **os.environ,
            "DATABASE_URL": test_database_url(),
            "STOMP_URL": settings.STOMP_URL,
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "DOVECOTE_PUSH_SESSION_SECONDS": "5",
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        command = [
            sys.executable, "-m", "celery", "-A", "dovecote", "worker", "-B", "--pool", "threads",
            "--concurrency", "8", "-l", "INFO", "--without-gossip", "--without-mingle",
            "-n", f"{name}@%h",
        ]
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(command, cwd=ROOT, env=full_env, stdout=self.log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        if nofile is not None:  # before it has imported Django: the push engine reads it when it starts
            limit_open_files(self.process.pid, nofile)
        self._wait_until_ready()

    def _wait_until_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"celery worker exited at start:\n{self.tail()}")
            if b"ready." in self.log_path.read_bytes():
                return
            time.sleep(0.1)
        raise RuntimeError(f"celery worker not ready in {timeout} s:\n{self.tail()}")

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def kill(self) -> None:
        """SIGKILL the worker and everything it started, as a crash would."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.log.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
                return
        self.log.close()


def limit_open_files(pid: int, soft: int) -> None:
    """Lower a process's soft open-file limit (RLIMIT_NOFILE), as a host with a low `ulimit -n` would."""
    hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)[1]
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))


def open_files(pid: int) -> list[str]:
    """What the process's file descriptors point at (`socket:[…]` for a socket), from /proc."""
    found = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            found.append(os.readlink(fd))
        except OSError:
            continue  # closed meanwhile
    return found


def close_other_sessions() -> None:
    """End the sessions background threads (the outbox relay) keep, so the test database can be dropped."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
