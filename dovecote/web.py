"""The web process (bin/web): granian serving api.wsgi, the same under `make run`, docker-compose and `make bench`.

Two processes of 24 threads each (WORKERS, THREADS): a request spends much of its time waiting on
PostgreSQL, Redis and the broker, on two cores two processes use both, and the more publishes wait
together the more share a transaction (delivery/group_commit.py). A thread waiting for its group's
commit costs nothing but its slot, and a publish beyond the slots waits in granian's queue without
joining a group: 2 × 24 took 1,415–1,587 single publishes/s on 64 connections where 2 × 16 took
1,141–1,293 and 2 × 8 972–1,086, at 10–20 % less CPU per publish (2 × 32: 1,427–1,517; docs/benchmarks.md,
2026-12-06). Each thread that leads a group holds a database connection (README: max_connections).
WEB_WORKERS and WEB_THREADS change them; HOST and PORT say where to listen.
granian's own log (to standard error) and the access log (WEB_ACCESS_LOG: `-` for standard output,
a file, or empty for none) are written in DOVECOTE_LOG_FORMAT's format, one record per line, like
every other line of Dovecote's processes. The access lines are `AccessLog`'s, in granian's format and
under its logger's name: granian's own formatted a timestamp per request that no line shows (2–3 % of the
web's CPU on single publishes). In each worker one thread writes the log records of all its request
threads (dovecote/logformat.py `write_from_one_thread`). SIGTERM stops it gracefully: requests in flight are
answered, and a worker still busy after GRACE_SECONDS is killed.

In each worker the stop signals are taken by one thread (`route_stop_signals`): granian's worker
handles them in Python, which runs a handler only on the main thread, and its main thread sleeps on
a lock until the worker stops. The kernel gives a process's signal to any thread that does not block
it, so a SIGTERM taken by one of granian's runtime threads left the worker serving, and accepting
connections, until it was killed at the end of the grace (seen once in CI; a SIGTERM sent to such a
thread with tgkill does it every time).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from granian.constants import HTTPModes, Interfaces
from granian.http import HTTP1Settings
from granian.server import MPServer

from dovecote.env import ConfigError, env_int, env_str
from dovecote.logformat import FORMATTERS

APPLICATION = "api.wsgi:worker_application"  # a factory granian calls once per worker (api/wsgi.py)
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})  # granian's: either stops a worker gracefully
GRACE_SECONDS = 10  # how long a SIGTERM waits for the workers' requests in flight
# granian's most: a request thread, and the database connection its publishes' groups are written on,
# outlive a quiet spell (at granian's default of 30 s the first publishes after one each paid for a new connection).
THREAD_IDLE_SECONDS = 600
WORKERS = 2  # WEB_WORKERS' default: granian worker processes
THREADS = 24  # WEB_THREADS' default: request threads per worker process
IDLE_SECONDS = 30  # how long a client's idle keep-alive connection is kept (granian's header read timeout)
# The request line without its query string, the status and the time taken; the formatter adds ts.
ACCESS_FORMAT = '%(addr)s "%(method)s %(path)s %(protocol)s" %(status)d %(dt_ms).1fms'
ACCESS_LOGGER = logging.getLogger("granian.access")  # the name the access lines have had since granian wrote them
StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]  # AccessLog's and api/publish_lane.py's


def log_config(log_format: str, access_log: str) -> dict[str, Any]:
    """granian's logging dictConfig: its own log to standard error, its access log where `access_log` says."""
    formatter = log_format.strip().lower()
    if formatter not in FORMATTERS:
        raise ConfigError(f"DOVECOTE_LOG_FORMAT={log_format!r} is not one of {', '.join(FORMATTERS)}")
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {formatter: {"()": f"dovecote.logformat.{FORMATTERS[formatter].__name__}"}},
        "handlers": {"console": {"class": "dovecote.logformat.StreamHandler", "stream": "ext://sys.stderr",
                                 "formatter": formatter},
                     "access": {**access_handler(access_log), "formatter": formatter}},
        "loggers": {"_granian": {"handlers": ["console"], "level": "INFO", "propagate": False},
                    "granian.access": {"handlers": ["access"], "level": "INFO", "propagate": False}},
    }


def access_log_setting() -> str:
    """WEB_ACCESS_LOG: `-` (the default) for standard output, a file's path, or empty for no access log."""
    return env_str("WEB_ACCESS_LOG", "-").strip()


class AccessLog:
    """A WSGI application that writes one access line per request (ACCESS_FORMAT) for `app`, which answers it.

    The time is from the call until `app` returns its response (a list, made by then, for every API
    reply; a streamed body is timed until it is returned, before it is sent); a request whose `app` raises is
    logged 500, as granian does.
    """

    def __init__(self, app: WsgiApp) -> None:
        self.app = app

    def __call__(self, wsgi_env: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        started = time.perf_counter()
        status = 500

        def start(status_line: str, headers: list[tuple[str, str]], *exc_info: Any) -> Any:
            nonlocal status
            status = int(status_line[:3])
            return start_response(status_line, headers, *exc_info)

        try:
            return self.app(wsgi_env, start)
        except BaseException:
            status = 500
            raise
        finally:
            ACCESS_LOGGER.info(ACCESS_FORMAT, {
                "addr": wsgi_env.get("REMOTE_ADDR", "-"), "method": wsgi_env.get("REQUEST_METHOD", "-"),
                "path": wsgi_env.get("PATH_INFO", ""), "protocol": wsgi_env.get("SERVER_PROTOCOL", "-"),
                "status": status, "dt_ms": (time.perf_counter() - started) * 1000})


def with_access_log(app: WsgiApp) -> WsgiApp:
    """`app` with an access line per request (AccessLog), unless WEB_ACCESS_LOG is empty."""
    return AccessLog(app) if access_log_setting() else app


def access_handler(access_log: str) -> dict[str, Any]:
    """The access log's handler: standard output for `-`, a file for a path, none when empty (logging is off)."""
    if access_log == "-":
        return {"class": "dovecote.logformat.StreamHandler", "stream": "ext://sys.stdout"}
    if access_log:
        return {"class": "dovecote.logformat.FileHandler", "filename": access_log}
    return {"class": "logging.NullHandler"}


def route_stop_signals() -> None:
    """From now on, one thread of this process takes SIGINT and SIGTERM and runs the handler set for them.

    Called in each worker before granian starts serving (api/wsgi.py `worker_application`). Every
    thread started after this call (granian's runtime and request threads among them) inherits
    the blocked signals, so none can take one and leave the main thread asleep. The handler is run once:
    granian's puts the stop on a channel of one place, and a third call would block forever.
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    threading.Thread(target=_take_stop_signals, name="web-stop-signals", daemon=True).start()


def _take_stop_signals() -> None:
    signum = signal.sigwait(STOP_SIGNALS)
    handler = signal.getsignal(signum)
    if callable(handler):
        handler(signum, None)
    elif handler != signal.SIG_IGN:  # no handler yet (the worker is still starting): the default, ending it
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        signal.raise_signal(signum)
    while True:  # later ones change nothing: the worker is stopping
        signal.sigwait(STOP_SIGNALS)


def shape() -> tuple[int, int]:
    """The web's worker processes and request threads in each: WEB_WORKERS and WEB_THREADS, else WORKERS and THREADS."""
    return env_int("WEB_WORKERS", WORKERS, minimum=1), env_int("WEB_THREADS", THREADS, minimum=1)


def server() -> MPServer:
    """The web process's server, configured from the environment."""
    access_log = access_log_setting()
    workers, threads = shape()
    return MPServer(  # worker processes (granian's Server on a Python with a GIL)
        APPLICATION, interface=Interfaces.WSGI, factory=True, http=HTTPModes.http1,
        address=env_str("HOST", "127.0.0.1"), port=env_int("PORT", 8000, minimum=0, maximum=65535),
        workers=workers, blocking_threads=threads,
        blocking_threads_idle_timeout=THREAD_IDLE_SECONDS,
        http1_settings=HTTP1Settings(header_read_timeout=IDLE_SECONDS * 1000),
        log_dictconfig=log_config(env_str("DOVECOTE_LOG_FORMAT", "keyvalue"), access_log),
        log_access=False,  # the application writes the access lines (api/wsgi.py, AccessLog)
        workers_kill_timeout=GRACE_SECONDS, respawn_failed_workers=True,
    )


def main() -> None:
    """Serve until SIGTERM or SIGINT; a bad setting ends the process with a message naming it."""
    try:
        web = server()
    except ConfigError as error:
        sys.exit(f"bin/web: {error}")
    web.serve()


if __name__ == "__main__":
    main()
