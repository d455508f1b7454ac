"""Nothing accepted is lost: not with the broker down at publish time, not when a worker is killed."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from delivery.models import Delivery, DeliveryAttempt, PushClaim
from rooms.models import ApiKey
from tests.delivery.push.test_push_delivery import publish, wait_for_status
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, Reply
from tests.services import stomp_url
from tests.tcp_proxy import TcpProxy
from tests.workers import WorkerProcess

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def proxy(live_services) -> Iterator[TcpProxy]:
    target = urlsplit(stomp_url())
    server = TcpProxy((target.hostname, target.port))
    yield server
    server.close()


def test_a_message_published_while_the_broker_is_down_is_delivered_once_it_is_back(
    client: Client, receiver: Receiver, proxy: TcpProxy, start_worker: Callable[..., WorkerProcess]
) -> None:
    room = make_room()
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.url("/hook"))
    target = urlsplit(stomp_url())
    via_proxy = f"stomp://{target.username}:{target.password}@127.0.0.1:{proxy.port}"
    proxy.refusing = True
    proxy.cut()

    with override_settings(STOMP_URL=via_proxy):
        reply = publish(client, key, room.pk)
        start_worker(STOMP_URL=via_proxy)
        time.sleep(8)  # past the sweeper's grace period, with the broker still down
        assert Delivery.objects.get(message_id=reply["message_id"]).status == "pending"
        assert receiver.requests("/hook") == []

        proxy.refusing = False
        wait_for_status(reply["message_id"], subscription.pk, "delivered", timeout=30)
    assert len(receiver.requests("/hook")) == 1


def test_a_worker_killed_mid_delivery_is_replaced_and_the_message_delivered(
    client: Client, receiver: Receiver, start_worker: Callable[..., WorkerProcess]
) -> None:
    room = make_room()
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    slow_first = receiver.script("/slow", lambda n: Reply(204, delay_s=1.5) if n == 1 else Reply(204))
    subscription = make_subscription(room, push_url=slow_first, timeout_ms=2000)
    first = start_worker("doomed")

    reply = publish(client, key, room.pk)
    assert receiver.wait_for("/slow", 1, timeout=15), first.tail()
    first.kill()
    killed_at, killed_clock = timezone.now(), time.monotonic()
    replacement = start_worker("replacement")

    try:
        delivery = wait_for_status(reply["message_id"], subscription.pk, "delivered", timeout=40)
    except AssertionError as timed_out:
        raise AssertionError(what_the_takeover_saw(reply["message_id"], subscription.pk, killed_at, killed_clock,
                                                   receiver, replacement)) from timed_out
    requests = receiver.requests("/slow")
    assert len(requests) >= 2 and {r.headers["webhook-id"] for r in requests} == {reply["message_id"]}
    timeline = list(DeliveryAttempt.objects.filter(delivery=delivery).values_list("attempt", "outcome"))
    assert timeline == [(1, "crashed"), (1, "success")]
    assert delivery.crashed_attempts == 1 and delivery.attempt_started_at is None


def what_the_takeover_saw(message_id: str, subscription_id: int, killed_at: datetime, killed_clock: float,
                          receiver: Receiver, replacement: WorkerProcess) -> str:
    """The delivery's row, its attempts, the subscription's claims and the replacement's log, timed from the kill."""
    def since_kill(moment: datetime | None) -> str:
        return "-" if moment is None else f"{(moment - killed_at).total_seconds():+.2f} s"

    row = Delivery.objects.get(message_id=message_id, subscription_id=subscription_id)
    attempts = [f"  attempt {a.attempt} {a.outcome} started {since_kill(a.started_at)}"
                for a in DeliveryAttempt.objects.filter(delivery=row).order_by("pk")]
    claims = [f"  claim {c.token[:8]} until {since_kill(c.until)} sized_for={c.sized_for} hot={c.hot}"
              for c in PushClaim.objects.filter(subscription_id=subscription_id)]
    posts = [f"  POST {r.at - killed_clock:+.2f} s" for r in receiver.requests("/slow")]
    return "\n".join([
        (f"now {since_kill(timezone.now())}: delivery {row.status}, attempts={row.attempts}, "
         f"attempt started {since_kill(row.attempt_started_at)}, crashed={row.crashed_attempts}, "
         f"next attempt {since_kill(row.next_attempt_at)}"),
        *attempts, *(claims or ["  no claim"]), *posts,
        "Celery processes on this machine (any of them may take the session's task):", *celery_processes(),
        "replacement worker's log:", replacement.tail(80),
    ])


def celery_processes() -> list[str]:
    """Each Celery process running here, with the database and broker it works on (from /proc)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes().split(b"\0")
            if not any(b"celery" in word for word in command):
                continue
            environment = dict(line.split(b"=", 1) for line in (proc / "environ").read_bytes().split(b"\0")
                               if b"=" in line)
        except OSError:
            continue  # gone meanwhile, or not ours to read
        found.append(f"  {proc.name}: {b' '.join(command[:12]).decode(errors='replace')} "
                     f"DATABASE_URL={environment.get(b'DATABASE_URL', b'').decode(errors='replace')} "
                     f"STOMP_URL={environment.get(b'STOMP_URL', b'').decode(errors='replace')}")
    return found or ["  none"]
