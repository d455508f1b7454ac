"""SIGTERM stops bin/web (granian) cleanly: a request in flight is answered, an idle keep-alive connection
does not hold it, and no worker has to be killed at the end of the grace (dovecote/web.py's GRACE_SECONDS).

bin/web runs as the Procfile runs it, on the suite's services; the request in flight is a long poll on an
empty pull subscription, seen in flight by its slot on the shared Redis. In a worker one thread takes the
stop signals (dovecote/web.py `route_stop_signals`): before, a SIGTERM taken by one of granian's runtime
threads left the worker serving until it was killed at the end of the grace (one CI run in many).
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.core.cache import cache

from dovecote import throttling
from dovecote.web import GRACE_SECONDS
from rooms.models import ApiKey
from tests import workers
from tests.demo_process import free_port
from tests.factories import make_event_type, make_room, make_subscription
from tests.run_processes import BinProcess

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("live_services")]

WAIT_MS = 4000  # the long poll's wait: well inside the grace


@pytest.fixture
def web(tmp_path: Path, django_db_blocker) -> Iterator[BinProcess]:
    """bin/web with one worker, on the suite's database and Redis; SIGKILLed if the test leaves it running."""
    port = free_port()
    env = {**os.environ, "DATABASE_URL": workers.test_database_url(), "STOMP_URL": settings.STOMP_URL,
           "CELERY_BROKER_URL": settings.CELERY_BROKER_URL, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
           "PORT": str(port), "WEB_WORKERS": "1"}
    process = BinProcess("web", env, tmp_path)
    process.base = f"http://127.0.0.1:{port}"
    try:
        yield process
    finally:
        process.stop()
        with django_db_blocker.unblock():
            workers.close_other_sessions()


def long_polls_held(key_id: int) -> int:
    """How many long polls of API key `key_id` the web processes hold now (their slots on the shared Redis)."""
    key = cache.make_and_validate_key(f"slots:long-polls:key-{key_id}")
    return int(throttling._redis_client(key).zcard(key))


def test_sigterm_answers_the_request_in_flight_and_stops_without_killing_a_worker(web: BinProcess) -> None:
    room = make_room()
    make_event_type(room)
    subscription = make_subscription(room, type="pull", push_url="")
    api_key, key = ApiKey.issue("graceful", rooms=[room])
    web.wait_until_serving(f"{web.base}/healthz/live")
    idle = http.client.HTTPConnection("127.0.0.1", int(web.base.rsplit(":", 1)[1]), timeout=30)
    idle.request("GET", "/healthz/live")
    assert idle.getresponse().read() is not None  # answered; the connection stays open, idle

    replies: list[httpx.Response | BaseException] = []

    def long_poll() -> None:
        try:
            replies.append(httpx.post(f"{web.base}/api/v1/subscriptions/{subscription.pk}/pull/",
                                      json={"wait_ms": WAIT_MS}, headers={"Authorization": f"Bearer {key}"},
                                      timeout=60))
        except httpx.HTTPError as error:
            replies.append(error)

    poll = threading.Thread(target=long_poll, daemon=True)
    poll.start()
    deadline = time.monotonic() + 60
    while not long_polls_held(api_key.pk):
        assert not replies, f"the long poll ended before it was seen in flight: {replies}\n{web.text()}"
        assert time.monotonic() < deadline, f"the long poll was never in flight:\n{web.text()}"
        time.sleep(0.05)

    os.killpg(web.process.pid, signal.SIGTERM)  # as honcho does on Ctrl-C
    try:
        returncode = web.process.wait(timeout=GRACE_SECONDS + 50)
    except subprocess.TimeoutExpired:
        pytest.fail(f"bin/web still runs {GRACE_SECONDS + 50} s after SIGTERM:\n{web.text()}")
    poll.join(timeout=60)

    log = web.text()
    assert len(replies) == 1 and isinstance(replies[0], httpx.Response), f"no reply: {replies}\n{log}"
    assert replies[0].status_code == 200, f"{replies[0].status_code} {replies[0].text}\n{log}"
    assert replies[0].json()["messages"] == [], replies[0].text
    assert returncode == 0, f"bin/web exited with {returncode}:\n{log}"
    assert not killed_at_the_end_of_the_grace(log), f"a worker was killed at the end of the grace:\n{log}"
    assert "Granian shutdown completed" in log, log


def test_in_a_worker_only_the_thread_waiting_for_them_can_take_sigterm_and_sigint(web: BinProcess) -> None:
    web.wait_until_serving(f"{web.base}/healthz/live")
    found = re.search(r"Spawning worker-1 with PID: (\d+)", web.text())
    assert found, web.text()
    tasks = Path(f"/proc/{found.group(1)}/task")
    threads = {tid.name: thread_signals(tid) for tid in tasks.iterdir()}
    stop_signals = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    takers = [tid for tid, (blocked, wchan) in threads.items() if blocked & stop_signals != stop_signals]
    # sigwait unblocks what it waits for while it waits: the one thread that may take them is that one
    assert len(takers) == 1 and threads[takers[0]][1].startswith("do_sigtimedwait"), threads
    assert len(threads) > 2, threads  # granian's runtime threads are among those blocking them


def thread_signals(task: Path) -> tuple[int, str]:
    """A thread's blocked signals (a mask, bit n - 1 for signal n) and where in the kernel it waits."""
    blocked = next(line for line in (task / "status").read_text().splitlines() if line.startswith("SigBlk:"))
    return int(blocked.split()[1], 16), (task / "wchan").read_text()


def killed_at_the_end_of_the_grace(log: str) -> bool:
    """Whether granian killed a worker because the grace ran out.

    granian also says "Killing worker … after it refused to gracefully stop" when the worker had already
    finished and was exiting, if its exit takes more than the millisecond granian allows between the join
    and its last look (a busy machine): that is not a kill at the end of the grace, so the time tells.
    """
    stamps = {kind: datetime.strptime(found.group(1) + "+0000", "%Y-%m-%d %H:%M:%S,%f%z")
              for kind, pattern in (("stop", r"Shutting down granian"), ("kill", r"refused to gracefully stop"))
              if (found := re.search(r"ts=(\S+ \S+) [^\n]*" + pattern, log))}
    if "kill" not in stamps:
        return False
    assert "stop" in stamps, log
    return (stamps["kill"] - stamps["stop"]).total_seconds() >= GRACE_SECONDS - 1
