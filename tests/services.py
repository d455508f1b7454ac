"""Reach the real services the integration tests need; fail under CI=true, skip elsewhere."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

DEFAULT_STOMP_URL = "stomp://dovecote:dovecote@127.0.0.1:61613"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"


def missing_service(what: str, detail: str) -> None:
    """Fail the test under CI (a missing service is a broken setup), skip it elsewhere."""
    message = f"{what} is not reachable: {detail}. Run `make services` (CI=true makes this a failure)."
    if IN_CI:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def require_tcp(what: str, url: str, default_port: int) -> str:
    """Return `url` if a TCP connection to its host and port succeeds."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or default_port
    try:
        with socket.create_connection((host, port), timeout=2):
            return url
    except OSError as error:
        missing_service(what, f"{host}:{port} ({error})")
    return url


def stomp_url() -> str:
    return require_tcp("The STOMP broker", os.environ.get("STOMP_URL") or DEFAULT_STOMP_URL, 61613)


def redis_url() -> str:
    return require_tcp("Redis", os.environ.get("TEST_REDIS_URL") or DEFAULT_REDIS_URL, 6379)
