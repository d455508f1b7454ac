from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from tests.fresh_ids import destroy_queues
from tests.services import DEFAULT_STOMP_URL, stomp_url
from tests.tcp_proxy import TcpProxy


@pytest.fixture(scope="module")
def queues_made() -> Iterator[set[str]]:
    """The random destinations a module's tests used, removed from the shared broker once its connections are closed.

    The end-of-run cleanup (tests/fresh_ids.py) cannot tie random names to a run.
    """
    made: set[str] = set()
    yield made
    destroy_queues(made.__contains__, os.environ.get("STOMP_URL") or DEFAULT_STOMP_URL)


@pytest.fixture
def destination(queues_made: set[str]) -> str:
    name = f"room-{uuid.uuid4().hex[:10]}::subscription-{uuid.uuid4().hex[:10]}"
    queues_made.add(name)
    return name


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    """A TCP proxy to the broker of `make services` that a test can cut (tests/tcp_proxy.py)."""
    parts = urlsplit(stomp_url())
    proxy = TcpProxy((parts.hostname or "127.0.0.1", parts.port or 61613))
    yield proxy
    proxy.close()
