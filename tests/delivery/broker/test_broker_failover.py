"""Broker failover: an Artemis primary/backup pair (shared store), its primary SIGKILLed under traffic.

Dovecote's STOMP client is given the pair as a failover list (STOMP_URL). The test sends a steady
stream of persistent messages, some scheduled like retries, through one StompBroker, kills the
primary's JVM mid-stream, and shows: the backup takes over and the same client goes on through it;
every send the broker confirmed with a RECEIPT is delivered (duplicates counted, and printed); a
send the dead broker never confirmed raised SendFailed (the caller's outbox keeps such rows pending);
scheduled messages fire at their due time, or at the takeover when that came later. It prints the
time from the kill to the first message delivered through the backup.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from delivery.broker import BrokerError, OutgoingMessage, SendFailed, connect
from delivery.broker.stomp import StompBroker
from delivery.broker.stomp_connection import parse_stomp_url
from tests.artemis_pair import (
    BACKUP_WAITING,
    BECAME_LIVE,
    ArtemisPair,
    create_pair,
    logged_at,
    wait_for_log,
    wait_for_stomp,
)

pytestmark = [pytest.mark.slow, pytest.mark.stomp]

SCHEDULED_TOLERANCE_S = 2.0  # a retry fires this close to max(its due time, the takeover)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[ArtemisPair]:
    artemis = create_pair(tmp_path)
    try:
        artemis.start(artemis.primary)
        wait_for_stomp(artemis, artemis.primary)
        artemis.start(artemis.backup)
        wait_for_log(artemis, artemis.backup, BACKUP_WAITING)
        yield artemis
    finally:
        artemis.stop()


def test_a_failover_list_names_the_brokers_in_order_with_the_first_ones_credentials() -> None:
    url = parse_stomp_url("stomp://user:p%40ss@primary.internal:61613,backup.internal:61614,[::1]")
    assert (url.scheme, url.login, url.passcode) == ("stomp", "user", "p@ss")
    assert url.brokers == (("primary.internal", 61613), ("backup.internal", 61614), ("::1", 61613))
    for bad, reason in [("stomp://u:p@a:1,amqp://b:2", "must use stomp://"), ("stomp://u:p@a:1,:5", "names no host"),
                        ("stomp://u:p@a:1,b:99999", "not a number"), ("stomp://u:p@a:1,stomp://x:y@b:2", "first")]:
        with pytest.raises(ValueError, match=reason):
            parse_stomp_url(bad)


def test_killing_the_primary_hands_every_confirmed_message_to_the_backup(pair: ArtemisPair) -> None:
    destination = f"room-failover::subscription-{uuid.uuid4().hex[:8]}"
    broker = connect(pair.url, connect_timeout=5, receipt_timeout=5)
    assert isinstance(broker, StompBroker) and broker.address == f"127.0.0.1:{pair.primary.port}"
    assert "-XX:+UseZGC" in pair.primary.java_args(), pair.primary.java_args()  # create-instance.sh's collector
    confirmed: dict[str, float] = {}  # body -> when it is due (epoch s): its making + its delay
    confirmed_at: list[float] = []  # when each confirmation came
    unconfirmed: list[str] = []
    arrivals: list[tuple[str, float]] = []
    killed_at: list[float] = []
    stop = threading.Event()

    sent_all = threading.Event()  # the sender has stopped: `confirmed` is final

    def send_steadily() -> None:
        try:
            send_until_stopped()
        finally:
            sent_all.set()

    def send_until_stopped() -> None:
        for n in range(100_000):
            if stop.is_set():
                return
            body = f"m{n}"
            delay_ms = 3000 if n % 10 == 0 else 0  # every tenth is a retry, scheduled 3 s later
            made_at = time.time()  # a message's delay counts from its making, not from its send (OutgoingMessage)
            try:
                broker.send(OutgoingMessage(destination, body.encode(), {"persistent": "true"}, delay_ms=delay_ms))
            except SendFailed:
                unconfirmed.append(body)
                time.sleep(0.05)
                continue
            confirmed[body] = made_at + delay_ms / 1000
            confirmed_at.append(time.time())
            time.sleep(0.01)

    def consume() -> None:
        with connect(pair.url, connect_timeout=5).consumer(destination, prefetch=50) as consumer:
            # Until every confirmed send arrived, once the sender stopped (a send may be confirmed after `stop`).
            # By name, not by count: a send refused for want of a receipt may still have reached the broker.
            while not sent_all.is_set() or not set(confirmed) <= {body for body, _ in arrivals}:
                message = consumer.receive(timeout=0.5)
                if message is None:
                    if sent_all.is_set() and time.time() > max(list(confirmed.values()), default=0) + 30:
                        return  # nothing more will come
                    continue
                arrivals.append((message.body.decode(), time.time()))
                try:
                    consumer.ack(message)
                except BrokerError:  # its connection was lost meanwhile: the broker delivers it again
                    continue

    sender, receiver = threading.Thread(target=send_steadily), threading.Thread(target=consume)
    sender.start()
    receiver.start()
    try:
        wait_until(lambda: len(confirmed) >= 100, 60, "100 sends confirmed by the primary", arrivals, confirmed)
        killed_at.append(time.time())
        pair.kill(pair.primary)
        wait_for_log(pair, pair.backup, BECAME_LIVE)
        wait_until(lambda: any(t > killed_at[0] for _, t in list(arrivals)), 60, "a delivery through the backup",
                   arrivals, confirmed, pair)
        wait_until(lambda: sum(1 for when in list(confirmed_at) if when > killed_at[0]) >= 100, 60,
                   "100 sends confirmed by the backup", arrivals, confirmed, pair)
    finally:
        stop.set()
        sender.join(timeout=60)
    receiver.join(timeout=120)
    broker.close()

    counts = Counter(body for body, _ in arrivals)
    live_at = logged_at(pair.backup, BECAME_LIVE)  # the backup's own word for when it became live
    first_after = min(t for _, t in arrivals if t > live_at)  # the first delivery through it
    takeover = first_after - killed_at[0]
    duplicates = sum(n - 1 for n in counts.values() if n > 1)
    print(f"\nfailover: {len(confirmed)} sends confirmed ({len(unconfirmed)} refused while no broker was live), "
          f"{len(counts)} distinct delivered, {duplicates} duplicates; kill to the backup live "
          f"{live_at - killed_at[0]:.2f} s, to the first delivery through it {takeover:.2f} s")
    lost = sorted(set(confirmed) - set(counts), key=lambda b: int(b[1:]))
    assert not lost, f"{len(lost)} confirmed messages never arrived, e.g. {lost[:10]}\n{pair.logs()}"
    assert broker.address == f"127.0.0.1:{pair.backup.port}"
    arrived_at = dict(reversed(arrivals))  # the first arrival of each
    late = {body: round(arrived_at[body] - max(due, first_after), 2) for body, due in confirmed.items()
            if int(body[1:]) % 10 == 0 and arrived_at[body] - max(due, first_after) > SCHEDULED_TOLERANCE_S}
    early = {body: round(due - arrived_at[body], 2) for body, due in confirmed.items()
             if int(body[1:]) % 10 == 0 and arrived_at[body] < due - 0.5}
    assert not late and not early, f"scheduled messages off their time: late {late}, early {early}"


def wait_until(condition, timeout: float, what: str, arrivals: list, confirmed: dict,
               pair: ArtemisPair | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, (f"{what} never happened: {len(confirmed)} confirmed, "
                                             f"{len(arrivals)} arrived\n{pair.logs() if pair else ''}")
        time.sleep(0.05)


MESSAGES, KILL_AT = 240, 100
RETRY_DELAY_MS = 2000


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("live_services")
def test_the_whole_stack_fails_over_to_the_backup_under_publish_push_and_retry_traffic(
    pair: ArtemisPair, client, receiver, start_worker, settings, request,
) -> None:
    """Publishes through the API (its relay), pushes from a real worker, every third message failing once.

    The primary dies a third of the way in: every 202 must end delivered through the backup, each retry
    POSTed at its due time (or, if it fell due during the takeover, right after it).
    """
    import json
    from datetime import timedelta

    from delivery.broker import shared
    from delivery.models import Delivery, DeliveryAttempt
    from rooms.models import ApiKey
    from tests.factories import make_event_type, make_room, make_subscription
    from tests.receiver import Reply

    settings.STOMP_URL = pair.url  # this process's relay follows the pair too (shared_broker reconnects)
    request.addfinalizer(shared.close_shared_broker)  # before the pair goes: the next test connects anew
    room = make_room(delivery_delay_ms=RETRY_DELAY_MS, delivery_delay_multiplier=1.0, delivery_attempts=20)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]

    def fail_every_third_once(n: int) -> Reply:
        request = receiver.requests("/hook")[n - 1]
        order = json.loads(request.body)["data"]["n"]
        return Reply(500 if order % 3 == 0 and request.headers.get("X-Delivery-Attempt") == "1" else 204)

    subscription = make_subscription(room, push_url=receiver.script("/hook", fail_every_third_once))
    worker = start_worker(STOMP_URL=pair.url)
    accepted: list[str] = []
    killed_wall = 0.0
    for n in range(MESSAGES):
        if n == KILL_AT:
            killed_wall = time.time()
            pair.kill(pair.primary)
        response = client.post(f"/api/v1/rooms/{room.pk}/messages/",
                               json.dumps({"event_type": "order.created", "event_version": "1", "payload": {"n": n}}),
                               content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
        assert response.status_code == 202, response.content
        accepted.append(response.json()["message_id"])
        time.sleep(0.02)

    deadline = time.monotonic() + 180
    statuses: Counter = Counter()
    while time.monotonic() < deadline:
        statuses = Counter(Delivery.objects.filter(subscription=subscription).values_list("status", flat=True))
        if statuses == {"delivered": MESSAGES}:
            break
        time.sleep(0.5)
    assert statuses == {"delivered": MESSAGES}, f"{statuses}\n{worker.tail()}\n{pair.logs()}"

    requests = receiver.requests("/hook")
    received = Counter(request.headers["webhook-id"] for request in requests)
    assert set(received) == set(accepted)  # everything accepted arrived
    # A duplicate is the same attempt POSTed again (a frame redelivered by the backup), not a retry.
    duplicates = sum(n - 1 for n in Counter((r.headers["webhook-id"], r.headers["X-Delivery-Attempt"])
                                            for r in requests).values())
    # The backup's own word for when it became live; the first POST after it came through the backup.
    live_at = logged_at(pair.backup, BECAME_LIVE)
    clock_offset = time.time() - time.monotonic()
    first_after = min(request.at + clock_offset for request in requests if request.at + clock_offset > live_at)
    takeover = first_after - killed_wall
    # Scheduled retries: attempt 2 started its delay after attempt 1 ended, or right after the backup went live.
    late, early, cut_short, worst = {}, {}, 0, 0.0
    for delivery in Delivery.objects.filter(subscription=subscription, attempts__gt=1):
        one, two = (DeliveryAttempt.objects.filter(delivery=delivery, attempt=k).order_by("started_at").first()
                    for k in (1, 2))
        if one is None or two is None or one.outcome != DeliveryAttempt.Outcome.FAILURE:
            # The kill cut the attempt short before its retry copy was confirmed: it is judged crashed once
            # it must have ended (started + timeout_ms) and tried again, as after a worker's crash.
            cut_short += 1
            continue
        due = one.started_at + timedelta(milliseconds=one.duration_ms + RETRY_DELAY_MS)
        slack = two.started_at.timestamp() - max(due.timestamp(), live_at)
        worst = max(worst, slack)
        if slack > SCHEDULED_TOLERANCE_S:  # when each happened, in s after the kill
            late[delivery.pk] = {"late": round(slack, 2), "due": round(due.timestamp() - killed_wall, 2),
                                 "attempt 1": round(one.started_at.timestamp() - killed_wall, 2),
                                 "attempt 2": round(two.started_at.timestamp() - killed_wall, 2)}
        if two.started_at < due - timedelta(milliseconds=500):
            early[delivery.pk] = round((due - two.started_at).total_seconds(), 2)
    print(f"\nfailover under traffic: {MESSAGES} accepted, all delivered, {duplicates} duplicate POSTs; kill to the "
          f"backup live {live_at - killed_wall:.2f} s, to its first POST {takeover:.2f} s; {len(late)} scheduled "
          f"retries late (the latest {worst:.2f} s after it was due), {len(early)} early; {cut_short} attempts cut "
          f"short by the kill, tried again as after a crash")
    assert not late and not early, (f"retries off their time (s after the kill; the backup live at "
                                    f"{live_at - killed_wall:.2f}): late {late}, early {early}\n{worker.tail()}")
