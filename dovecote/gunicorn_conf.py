"""gunicorn's settings for the web process (bin/web): the same under `make run`, docker-compose and `make bench`.

Two processes of eight threads each: a request spends much of its time waiting on PostgreSQL,
Redis and the broker, and on two cores two processes use both (docs/benchmarks.md has the
measurements). WEB_WORKERS and WEB_THREADS change them; HOST and PORT say where to listen.
gunicorn's own log and its access log (WEB_ACCESS_LOG) are written in DOVECOTE_LOG_FORMAT's format,
one record per line, like every other line of Dovecote's processes.
"""

from __future__ import annotations

import os

from gunicorn.config import Config
from gunicorn.glogging import Logger

from dovecote.logformat import formatter_named


class DovecoteLogger(Logger):
    """gunicorn's logger, its lines formatted by Dovecote's formatter (key=value or JSON)."""

    def setup(self, cfg: Config) -> None:
        super().setup(cfg)
        formatter = formatter_named(os.environ.get("DOVECOTE_LOG_FORMAT", "keyvalue"))
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(formatter)


bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_WORKERS", "2"))
threads = int(os.environ.get("WEB_THREADS", "8"))
worker_class = "gthread"
keepalive = 30  # seconds a client's idle keep-alive connection is kept
graceful_timeout = 10
accesslog = os.environ.get("WEB_ACCESS_LOG", "-") or None
logger_class = DovecoteLogger
