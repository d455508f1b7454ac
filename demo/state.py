"""What `make demo` keeps between runs, and how it keeps out of the way of a demo already running.

The demo binds its port before it reads or writes anything, then takes a lock on its saved
state (an exclusive `flock` on `<database>-demo.lock` beside the SQLite file, released by the kernel when
the process ends, however it ends). A second demo on the same port stops at the first step, one on
another port with the same state at the second: neither migrates, re-sends, nor changes the
login, so the running demo is left exactly as it was.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from django.conf import settings

NEXT_PORTS = 100  # how far past a busy port to look for a free one to suggest


class PortInUse(Exception):
    """The port is taken; `suggestion` is a free port after it, if one was found."""

    def __init__(self, port: int, suggestion: int | None) -> None:
        super().__init__(f"port {port} is in use")
        self.port = port
        self.suggestion = suggestion


def bind(host: str, port: int) -> socket.socket:
    """Return a listening socket on host:port; raise PortInUse when something else listens there."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as waitress does: a restart need not wait
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise PortInUse(port, free_port_after(host, port)) from None
        raise
    sock.listen(1024)
    return sock


def free_port_after(host: str, port: int) -> int | None:
    """Return the first port after `port` that can be bound on `host` now, or None."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for candidate in range(port + 1, min(port + NEXT_PORTS, 65535) + 1):
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, candidate))
            except OSError:
                continue
            return candidate
    return None


@dataclass(frozen=True)
class DemoState:
    """The demo's saved state: the SQLite file and, beside it, the login it printed and its lock."""

    database: Path

    @classmethod
    def configured(cls) -> DemoState:
        return cls(Path(settings.DATABASES["default"]["NAME"]).resolve())

    @property
    def login_file(self) -> Path:
        return self.database.with_name(f"{self.database.stem}-login.json")

    @property
    def lock_file(self) -> Path:
        return self.database.with_name(f"{self.database.stem}-demo.lock")

    def files(self) -> list[Path]:
        """Return the state's files that exist: the database and its journals, the login, and beat's schedule
        files (under var/, and those earlier versions left in the project's root)."""
        beat = Path(settings.CELERY_BEAT_SCHEDULE_FILENAME)
        journals = [Path(f"{self.database}{suffix}") for suffix in ("-wal", "-shm", "-journal")]
        left_in_root = Path(settings.BASE_DIR).glob("celerybeat-schedule*")
        schedules = {*beat.parent.glob(f"{beat.name}*"), *left_in_root}
        candidates = [self.database, *journals, self.login_file, *sorted(schedules)]
        return [path for path in candidates if path.exists()]

    def forget(self) -> list[Path]:
        """Delete the saved state (holding the lock, before Django opens the database); return what went."""
        removed = self.files()
        for path in removed:
            path.unlink(missing_ok=True)
        return removed

    def lock(self, port: int) -> IO[str] | None:
        """Take the state's lock, noting this demo's pid and port in it; None when another demo holds it.

        Keep the returned file open for as long as the demo runs: closing it (or exiting) releases the lock.
        """
        self.lock_file.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.lock_file, "a+")  # noqa: SIM115 - held open while the demo runs
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
        handle.seek(0)
        handle.truncate()
        json.dump({"pid": os.getpid(), "port": port}, handle)
        handle.flush()
        return handle

    def holder(self) -> dict[str, int] | None:
        """Return the pid and port of the demo running on this state, or None when none runs."""
        try:
            handle = open(self.lock_file)  # noqa: SIM115 - closed below
        except FileNotFoundError:
            return None
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    return json.loads(handle.read() or "{}")
                except ValueError:
                    return {}
            return None
