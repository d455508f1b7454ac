"""One room's receiver that holds its POSTs cannot take a worker's sockets from the other rooms.

A real worker whose open-file limit is 256 (so its push engine's socket budget is 128: half of it,
64 to a room, 32 to a subscription) runs room A's two subscriptions with max_in_flight 300 to a
receiver on 127.0.0.1 that accepts and never answers, or answers 2xx just before the timeout (which
never opens the breaker), while room B publishes to a receiver that answers at once.
Before the budget, room A's 600 POSTs took every file descriptor: room B's pushes failed with
"Too many open files".
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from django.test import Client

from delivery.actions import delete_subscription
from delivery.models import Delivery
from rooms.models import ApiKey, Room
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, Reply, SilentReceiver
from tests.workers import open_files

pytestmark = pytest.mark.django_db(transaction=True)
NOFILE = 256
ROOM_SOCKETS = NOFILE // 2 * 50 // 100  # DOVECOTE_PUSH_SOCKETS_PER_ROOM_PERCENT of the derived budget
ATTACK_MESSAGES = 300
VICTIM_MESSAGES = 30
TIMEOUT_MS = 20_000


@dataclass(frozen=True)
class Attack:
    """Room A's receiver: its URL, and the POSTs it holds open now and at most."""

    url: str
    open_now: Callable[[], int]
    most_open: Callable[[], int]


@pytest.fixture(params=["never answers", "answers 2xx just before the timeout"])
def attack(request: pytest.FixtureRequest, receiver: Receiver) -> Iterator[Attack]:
    if request.param == "never answers":
        silent = SilentReceiver()
        yield Attack(silent.url("/a"), lambda: silent.open, lambda: silent.most_open)
        silent.close()
    else:  # such a receiver never opens the breaker: the attack can go on for ever
        url = receiver.script("/a", lambda n: Reply(204, delay_s=TIMEOUT_MS / 1000 - 0.5))
        yield Attack(url, lambda: receiver.active["/a"], lambda: receiver.most_active["/a"])


def publish(client: Client, room: Room, count: int) -> None:
    key = ApiKey.issue(f"key-{room.pk}", rooms=[room])[1]
    body = {"messages": [{"event_type": "order.created", "event_version": "1", "payload": {"n": n}}
                         for n in range(count)]}
    response = client.post(f"/api/v1/rooms/{room.pk}/messages/batch/", json.dumps(body),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 202, response.content


def delivered(subscription_id: int) -> int:
    return Delivery.objects.filter(subscription_id=subscription_id, status="delivered").count()


def test_a_room_whose_receiver_holds_its_posts_gets_at_most_its_share_of_sockets_and_another_room_is_delivered(
        client: Client, receiver: Receiver, attack: Attack, start_worker) -> None:
    worker = start_worker("budget", nofile=NOFILE)
    attacker_room = make_room(delivery_delay_ms=200, delivery_delay_multiplier=1, delivery_attempts=50)
    make_event_type(attacker_room)
    attackers = [make_subscription(attacker_room, max_in_flight=300, timeout_ms=TIMEOUT_MS, push_url=attack.url)
                 for _ in range(2)]
    victim_room = make_room()
    make_event_type(victim_room)
    victim = make_subscription(victim_room, max_in_flight=10, push_url=receiver.url("/b"))
    seen: list[tuple[float, int, int, int]] = []  # (s, POSTs open at room A's receiver, worker fds, delivered)
    started = time.monotonic()

    def look() -> tuple[float, int, int, int]:
        seen.append((round(time.monotonic() - started, 1), attack.open_now(), len(open_files(worker.process.pid)),
                     delivered(victim.pk)))
        return seen[-1]

    try:
        publish(client, attacker_room, ATTACK_MESSAGES)
        while look()[1] < ROOM_SOCKETS // 2:  # the attack is under way
            assert time.monotonic() - started < 90, f"the attack never began: {seen[-5:]}\n{worker.tail()}"
            time.sleep(0.2)
        publish(client, victim_room, VICTIM_MESSAGES)
        deadline = time.monotonic() + 120
        while look()[3] < VICTIM_MESSAGES:
            assert time.monotonic() < deadline, f"room B not delivered: {seen[-10:]}\n{worker.tail()}"
            time.sleep(0.2)
        print(f"(seconds, open at room A's receiver, worker fds, room B delivered): {seen[::10]} … {seen[-1]}")
        assert attack.most_open() <= ROOM_SOCKETS, (attack.most_open(), seen)
        assert max(fds for _, _, fds, _ in seen) < NOFILE, seen
        assert len(receiver.requests("/b")) >= VICTIM_MESSAGES
        assert b"Too many open files" not in worker.log_path.read_bytes(), worker.tail()
    finally:
        for subscription in attackers:
            delete_subscription(subscription)
        # A graceful stop lets room A's held POSTs run to their 20 s timeout: not what this test is about.
        worker.kill()
