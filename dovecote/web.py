"""The web process (bin/web): granian serving api.wsgi, the same under `make run`, docker-compose and `make bench`.

Two processes of sixteen threads each: a request spends much of its time waiting on PostgreSQL,
Redis and the broker, on two cores two processes use both, and the more publishes wait together the
more share a transaction (delivery/group_commit.py): 2 × 16 took 752 publishes/s where 2 × 8 took
500, 2 × 32 698, 2 × 4 280, 3 × 8 458 and 1 × 64 508 (docs/benchmarks.md). WEB_WORKERS and
WEB_THREADS change them; HOST and PORT say where to listen.
granian's own log (to standard error) and its access log (WEB_ACCESS_LOG: `-` for standard output,
a file, or empty for none) are written in DOVECOTE_LOG_FORMAT's format, one record per line, like
every other line of Dovecote's processes. SIGTERM stops it gracefully: requests in flight are
answered, and a worker still busy after GRACE_SECONDS is killed.
"""

from __future__ import annotations

import sys
from typing import Any

from granian.constants import HTTPModes, Interfaces
from granian.http import HTTP1Settings
from granian.server import MPServer

from dovecote.env import ConfigError, env_int, env_str
from dovecote.logformat import FORMATTERS

APPLICATION = "api.wsgi:application"  # the publish lane in front of Django (api/wsgi.py)
GRACE_SECONDS = 10  # how long a SIGTERM waits for the workers' requests in flight
# granian's most: a request thread, and the database connection its publishes' groups are written on,
# outlive a quiet spell (at granian's default of 30 s the first publishes after one each paid for a new connection).
THREAD_IDLE_SECONDS = 600
IDLE_SECONDS = 30  # how long a client's idle keep-alive connection is kept (granian's header read timeout)
# The request line without its query string, the status and the time taken; the formatter adds ts.
ACCESS_FORMAT = '%(addr)s "%(method)s %(path)s %(protocol)s" %(status)d %(dt_ms).1fms'


def log_config(log_format: str, access_log: str) -> dict[str, Any]:
    """granian's logging dictConfig: its own log to standard error, its access log where `access_log` says."""
    formatter = log_format.strip().lower()
    if formatter not in FORMATTERS:
        raise ConfigError(f"DOVECOTE_LOG_FORMAT={log_format!r} is not one of {', '.join(FORMATTERS)}")
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {formatter: {"()": f"dovecote.logformat.{FORMATTERS[formatter].__name__}"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr",
                                 "formatter": formatter},
                     "access": {**access_handler(access_log), "formatter": formatter}},
        "loggers": {"_granian": {"handlers": ["console"], "level": "INFO", "propagate": False},
                    "granian.access": {"handlers": ["access"], "level": "INFO", "propagate": False}},
    }


def access_handler(access_log: str) -> dict[str, Any]:
    """The access log's handler: standard output for `-`, a file for a path, none when empty (logging is off)."""
    if access_log == "-":
        return {"class": "logging.StreamHandler", "stream": "ext://sys.stdout"}
    if access_log:
        return {"class": "logging.FileHandler", "filename": access_log}
    return {"class": "logging.NullHandler"}


def server() -> MPServer:
    """The web process's server, configured from the environment."""
    access_log = env_str("WEB_ACCESS_LOG", "-").strip()
    return MPServer(  # worker processes (granian's Server on a Python with a GIL)
        APPLICATION, interface=Interfaces.WSGI, http=HTTPModes.http1,
        address=env_str("HOST", "127.0.0.1"), port=env_int("PORT", 8000, minimum=0, maximum=65535),
        workers=env_int("WEB_WORKERS", 2, minimum=1), blocking_threads=env_int("WEB_THREADS", 16, minimum=1),
        blocking_threads_idle_timeout=THREAD_IDLE_SECONDS,
        http1_settings=HTTP1Settings(header_read_timeout=IDLE_SECONDS * 1000),
        log_dictconfig=log_config(env_str("DOVECOTE_LOG_FORMAT", "keyvalue"), access_log),
        log_access=bool(access_log), log_access_format=ACCESS_FORMAT,
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
