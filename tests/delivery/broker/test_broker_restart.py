"""The real broker killed under traffic: Apache Artemis SIGKILLed mid-stream, then started again.

Nothing acknowledged to a publisher (202) may be lost and nothing may stay stuck; duplicates
are allowed by at-least-once delivery, and the test counts and reports them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import Client

from delivery.models import Delivery
from rooms.models import ApiKey
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver
from tests.services import IN_CI
from tests.workers import WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.usefixtures("live_services")]

ROOT = Path(__file__).resolve().parents[3]
MESSAGES = 300
KILL_AT, RESTART_AT = 100, 160


def artemis_pid() -> int | None:
    """The pid of the Artemis JVM that `make services` started, if it runs."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(arg.startswith(b"-Dartemis.instance=") for arg in args):
            return int(entry.name)
    return None


@pytest.fixture
def artemis() -> int:
    pid = artemis_pid()
    if pid is None or os.geteuid() != 0:
        message = "needs the Artemis of `make services` and root to kill and restart it"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return pid


def start_artemis_again() -> None:
    done = subprocess.run(["bash", str(ROOT / "scripts" / "services.sh")], cwd=ROOT, capture_output=True,
                          text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def test_artemis_killed_under_traffic_and_restarted_loses_nothing_and_leaves_nothing_stuck(
    client: Client, receiver: Receiver, start_worker: Callable[..., WorkerProcess], artemis: int,
    record_property: Callable[[str, object], None],
) -> None:
    room = make_room(delivery_delay_ms=500, delivery_delay_multiplier=1.5, delivery_attempts=20)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.url("/hook"))
    worker = start_worker()
    accepted: list[str] = []
    restart: threading.Thread | None = None

    for n in range(MESSAGES):  # about 50 a second
        if n == KILL_AT:
            os.kill(artemis, signal.SIGKILL)
        if n == RESTART_AT:
            restart = threading.Thread(target=start_artemis_again)
            restart.start()
        response = client.post(f"/api/v1/rooms/{room.pk}/messages/",
                               json.dumps({"event_type": "order.created", "event_version": "1",
                                           "payload": {"n": n}}),
                               content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
        assert response.status_code == 202, response.content
        accepted.append(response.json()["message_id"])
        time.sleep(0.02)
    assert restart is not None
    restart.join(180)
    assert artemis_pid() not in (None, artemis)

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        statuses = Counter(Delivery.objects.filter(subscription=subscription).values_list("status", flat=True))
        if statuses == {"delivered": MESSAGES}:
            break
        time.sleep(0.5)
    assert statuses == {"delivered": MESSAGES}, f"{statuses}\n{worker.tail()}"

    received = Counter(request.headers["webhook-id"] for request in receiver.requests("/hook"))
    assert set(received) == set(accepted)  # every accepted message arrived
    duplicates = sum(count - 1 for count in received.values())
    record_property("duplicates", duplicates)
    print(f"{MESSAGES} accepted, all delivered; {duplicates} duplicate POSTs after the broker's SIGKILL")
