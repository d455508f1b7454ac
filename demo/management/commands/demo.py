"""Run Dovecote in embedded mode: SQLite, the in-memory broker, and the worker and beat in-process."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections
from waitress import serve

from delivery.push.engine import stop_engine
from demo import embedded, seed
from demo.state import DemoState, PortInUse, bind
from demo.traffic import publish_forever
from dovecote.celery import app
from dovecote.env import env_int
from dovecote.wsgi import application


class Command(BaseCommand):
    help = "Run the whole of Dovecote in this process with demo rooms, subscriptions and traffic."
    # The system checks open the database: they run once the port and the state's lock are held.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=env_int("PORT", 8000, minimum=1))
        parser.add_argument("--rate", type=float, default=3.0, help="Demo events published per second.")
        parser.add_argument("--reset", action="store_true",
                            help="Start from a fresh state (database, login), unless another demo uses it.")
        parser.add_argument("--running", action="store_true",
                            help="Only say whether a demo runs on this state: exit status 0 if one does.")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.CELERY_BROKER_URL.startswith("memory://"):
            raise CommandError("the demo runs its worker in-process: unset CELERY_BROKER_URL "
                               "(make demo does)")
        if not settings.DOVECOTE_DEMO:
            raise CommandError("set DOVECOTE_DEMO=true to serve the demo receiver (make demo does)")
        state = DemoState.configured()
        if options["running"]:
            raise SystemExit(0 if state.holder() is not None else 1)
        host, port = options["host"], options["port"]
        listener = self.bind_first(state, host, port)  # before anything of the state is read or written
        lock = state.lock(port)
        if lock is None:
            listener.close()
            self.refuse(f"a demo already runs on this saved state: {self.running_demo(state, port)}")
        try:
            if options["reset"]:
                self.forget(state)
            self.check()
            self.run(state, listener, host, port, options["rate"])
        finally:
            lock.close()

    def bind_first(self, state: DemoState, host: str, port: int):  # noqa: ANN201 - socket.socket
        try:
            return bind(host, port)
        except PortInUse as busy:
            free = busy.suggestion or port + 1
            holder = state.holder()
            if holder and holder.get("port") == port:
                self.refuse(f"port {port} is in use by the demo of this saved state: "
                            f"{self.running_demo(state, free)}")
            self.refuse(f"port {port} is in use: `PORT={free} make demo`")
        except OSError as error:
            self.refuse(f"cannot listen on {host}:{port}: {error.strerror or error}")

    def running_demo(self, state: DemoState, free_port: int) -> str:
        """Say where the demo holding the state runs, and how to start another beside it on `free_port`."""
        holder = state.holder() or {}
        where = f"http://127.0.0.1:{holder['port']}/" if holder.get("port") else "its port"
        other = shown(state.database.with_name(f"demo-{free_port}.sqlite3"))
        return (f"open {where} (pid {holder.get('pid', '?')}; the login and API key it printed work), "
                f"or stop it first. A second demo needs its own state: "
                f"`PORT={free_port} DOVECOTE_SQLITE_PATH={other} make demo`")

    def refuse(self, message: str) -> None:
        self.stderr.write(message)
        raise SystemExit(1)

    def forget(self, state: DemoState) -> None:
        connections.close_all()
        removed = state.forget()
        if removed:
            self.stdout.write("forgot the saved state: " + ", ".join(shown(path) for path in removed))

    def run(self, state: DemoState, listener: Any, host: str, port: int, rate: float) -> None:
        call_command("migrate", verbosity=0)
        base_url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{port}"
        seed.seed(base_url)
        seed.release_sessions()
        resent = seed.resend_lost_frames()
        password, api_key, kept = seed.demo_login(state.login_file)
        worker = embedded.start_worker(app)
        beat = embedded.start_beat(app)
        stop = threading.Event()
        threading.Thread(target=publish_forever, args=(stop, rate), daemon=True).start()
        self.stdout.write(f"Dovecote demo on {base_url}/  "
                          "(embedded: SQLite, in-memory broker, in-process worker)")
        if resent:
            self.stdout.write(f"  sending again {resent} deliveries the in-memory broker lost "
                              "at the last stop")
        self.stdout.write(f"  login:   {seed.ADMIN} / {password}\n  API key: {api_key}")
        if kept:
            self.stdout.write(f"  (the same login and key as before: {shown(state.login_file)} keeps them)")
        self.stdout.write("  Ctrl-C stops it; `make demo` goes on from here, "
                          "`make demo-reset` starts afresh.")
        signal.signal(signal.SIGTERM, stop_serving)  # `kill` stops it as cleanly as Ctrl-C
        try:
            serve(application, sockets=[listener], threads=8, _quiet=True)
        except KeyboardInterrupt:
            pass
        finally:
            stop.set()
            stop_engine(timeout=10)
            beat.stop()
            worker.stop(in_sighandler=False)
            self.stdout.write("Dovecote demo stopped.")


def stop_serving(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def shown(path: Path) -> str:
    """Return `path` relative to the working directory when it lies inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
