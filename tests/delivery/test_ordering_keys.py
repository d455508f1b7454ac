"""Ordering keys end to end: one event per key at a time in publish order, a failing key holding only itself,
parked keys, and order kept across a worker killed mid-sequence."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable

import pytest
from django.db.models import Count
from django.test import Client

from delivery.models import Delivery, DeliveryAttempt
from rooms.models import ApiKey, Room
from subscriptions.models import Subscription
from tests.callers import call_api
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, Reply
from tests.workers import WorkerProcess

pytestmark = pytest.mark.django_db(transaction=True)


def make_ordered_room(**settings: object) -> tuple[Room, str]:
    room = make_room(delivery_delay_ms=50, delivery_delay_multiplier=1.0, delivery_attempts=100, **settings)
    make_event_type(room)
    return room, ApiKey.issue("shop", rooms=[room])[1]


def publish_batch(client: Client, key: str, room: Room, events: list[tuple[str, int]]) -> list[dict]:
    """Publish (ordering key, sequence number) events in this order, 500 to a batch."""
    replies = []
    for start in range(0, len(events), 500):
        body = {"messages": [{"event_type": "order.created", "event_version": "1", "ordering_key": k,
                              "payload": {"key": k, "seq": n}} for k, n in events[start:start + 500]]}
        response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/batch/", body, key)
        assert response.status_code == 202, response.content
        replies += response.json()["messages"]
    return replies


def event_of(body: bytes) -> tuple[str, int]:
    data = json.loads(body)["data"]
    return data["key"], data["seq"]


class KeyedReceiver:
    """Records each request's (key, seq) and answers by a rule on them; counts successes per key."""

    def __init__(self, receiver: Receiver, path: str, fails: Callable[[str, int, int], bool]) -> None:
        self.requests: dict[str, list[tuple[int, int]]] = defaultdict(list)  # key -> [(seq, status)]
        self.tries: dict[tuple[str, int], int] = defaultdict(int)
        self.lock = threading.Lock()
        self.fails = fails
        self.receiver = receiver
        self.path = path
        self.url = receiver.script(path, self.reply)

    def reply(self, n: int) -> Reply:
        key, seq = event_of(self.receiver.requests(self.path)[n - 1].body)
        with self.lock:
            self.tries[key, seq] += 1
            status = 500 if self.fails(key, seq, self.tries[key, seq]) else 204
            self.requests[key].append((seq, status))
        return Reply(status)

    def delivered(self, key: str) -> list[int]:
        """The sequence numbers of `key` answered 2xx, in the order they arrived."""
        with self.lock:
            return [seq for seq, status in self.requests[key] if status == 204]

    def attempted(self, key: str) -> list[int]:
        with self.lock:
            return [seq for seq, _ in self.requests[key]]


def wait_until(condition: Callable[[], bool], timeout: float, what: str, worker: WorkerProcess | None = None,
               progress: Callable[[], str] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}" + (f"; {progress()}" if progress else "")
                                 + (f"\n{worker.tail()}" if worker else ""))
        time.sleep(0.1)


def in_order_once_each(seqs: list[int]) -> list[int]:
    """Collapse repeats of one event in a row (a retry, a crash's redelivery) to one."""
    return [seq for i, seq in enumerate(seqs) if i == 0 or seqs[i - 1] != seq]


def test_a_thousand_events_on_ten_keys_arrive_in_publish_order_and_a_failing_key_holds_only_itself(
    client: Client, receiver: Receiver, start_worker: Callable[..., WorkerProcess]
) -> None:
    room, key = make_ordered_room()
    gate = threading.Event()  # while closed, every event of key k3 fails
    keyed = KeyedReceiver(receiver, "/ordered", lambda k, seq, tries: k == "k3" and not gate.is_set())
    # k3's first event is retried every 500 ms, up to 100 times: it outlasts the other keys. The
    # circuit breaker is off: on a slow machine k3's failures can be half of a push session's
    # attempts, which opens it (right for an endpoint failing that much; not what this test is about).
    subscription = make_subscription(room, push_url=keyed.url, ordering="on", max_in_flight=20,
                                     delivery_delay_ms=500, breaker_failure_threshold=0, breaker_failure_ratio=0)
    events = [(f"k{i % 10}", i // 10) for i in range(1000)]  # interleaved: k0 #0, k1 #0, …, k9 #99
    worker = start_worker()

    publish_batch(client, key, room, events)

    others = [f"k{i}" for i in range(10) if i != 3]

    def progress() -> str:
        statuses = dict(Delivery.objects.filter(subscription=subscription).values("status")
                        .annotate(n=Count("pk")).values_list("status", "n"))
        subscription.refresh_from_db()
        return (f"delivered per key {({k: len(keyed.delivered(k)) for k in others})}, deliveries by status "
                f"{statuses}, breaker {subscription.breaker_state}")

    wait_until(lambda: all(len(keyed.delivered(k)) >= 100 for k in others), 240, "nine keys delivered", worker,
               progress)
    # The nine keys finished while k3's first event kept failing and the other 99 of k3 waited, unsent.
    assert keyed.delivered("k3") == []
    assert set(keyed.attempted("k3")) == {0} and len(keyed.attempted("k3")) >= 3
    held = Delivery.objects.filter(subscription=subscription, ordering_key="k3", status="held").count()
    assert held == 99
    for k in others:
        assert keyed.delivered(k) == list(range(100)), k
        assert keyed.attempted(k) == list(range(100)), k  # one at a time: nothing sent out of turn

    gate.set()
    wait_until(lambda: len(keyed.delivered("k3")) == 100, 240, "k3 delivered", worker)
    assert keyed.delivered("k3") == list(range(100))
    assert in_order_once_each(keyed.attempted("k3")) == list(range(100))  # its retries never let a later one by
    assert receiver.most_active["/ordered"] <= 10  # at most one request per key at once
    # The receiver answered the last one; its outcome is recorded right after.
    wait_until(lambda: set(Delivery.objects.filter(subscription=subscription).values_list("status", flat=True))
               == {"delivered"}, 30, "every delivery recorded delivered", worker)


def test_a_worker_killed_mid_sequence_loses_and_reorders_nothing(
    client: Client, receiver: Receiver, start_worker: Callable[..., WorkerProcess]
) -> None:
    room, key = make_ordered_room()
    # The 40th POST takes 3 s: the worker is killed while it is under way.
    slow = receiver.script("/slow", lambda n: Reply(204, delay_s=3.0 if n == 40 else 0.02))
    subscription = make_subscription(room, push_url=slow, ordering="on", timeout_ms=5000)
    events = [(f"k{i % 4}", i // 4) for i in range(200)]
    doomed = start_worker("doomed")

    publish_batch(client, key, room, events)
    assert len(receiver.wait_for("/slow", 40, timeout=60)) >= 40, doomed.tail()
    doomed.kill()  # SIGKILL mid-sequence: a POST under way, its outcome unrecorded, its frame unacked
    cut_short = event_of(receiver.requests("/slow")[39].body)
    replacement = start_worker("replacement")

    wait_until(lambda: Delivery.objects.filter(subscription=subscription, status="delivered").count() == 200,
               180, "all 200 delivered", replacement)
    arrived: dict[str, list[int]] = defaultdict(list)
    for request in receiver.requests("/slow"):
        k, seq = event_of(request.body)
        arrived[k].append(seq)
    for k in ("k0", "k1", "k2", "k3"):
        # At least once: an event whose POST the kill cut short comes again, but never after a later one.
        assert in_order_once_each(arrived[k]) == list(range(50)), (k, arrived[k])
    k, seq = cut_short
    # The POST cut short was made again, before the key's next event (at least once: a copy the rules
    # had put back while the dead worker's attempt might still run can bring one more duplicate).
    assert arrived[k].count(seq) >= 2, (k, seq, arrived[k])
    crashed = {(a.delivery.message.payload["key"], a.delivery.message.payload["seq"]) for a in
               DeliveryAttempt.objects.filter(delivery__subscription=subscription, outcome="crashed")
               .select_related("delivery__message")}
    assert cut_short in crashed  # counted as a crashed attempt, then delivered; the key waited meanwhile


@pytest.mark.parametrize("ordering", ["on", "park"])
def test_a_dead_letter_moves_its_key_on_or_parks_it_until_released(
    client: Client, receiver: Receiver, start_worker: Callable[..., WorkerProcess], admin_key: str, ordering: str
) -> None:
    room, key = make_ordered_room()
    keyed = KeyedReceiver(receiver, "/dl", lambda k, seq, tries: k == "a" and seq == 1)  # a #1 always fails
    subscription = make_subscription(room, push_url=keyed.url, ordering=ordering, delivery_attempts=1)
    worker = start_worker()

    publish_batch(client, key, room, [("a", n) for n in range(5)] + [("b", n) for n in range(5)])

    wait_until(lambda: keyed.delivered("b") == list(range(5)), 60, "key b delivered", worker)
    if ordering == "on":
        wait_until(lambda: keyed.delivered("a") == [0, 2, 3, 4], 60, "key a moved on", worker)
        assert keyed.attempted("a") == [0, 1, 1, 2, 3, 4]
        return
    wait_until(lambda: Delivery.objects.filter(subscription=subscription, parks_key=True).exists(), 60,
               "key a parked", worker)
    time.sleep(1)  # a parked key sends nothing more
    assert keyed.attempted("a") == [0, 1, 1]
    parked = call_api(client, "get", f"/api/v1/subscriptions/{subscription.pk}/parked-keys/", None, admin_key).json()
    assert [(p["ordering_key"], p["waiting"]) for p in parked] == [("a", 3)]

    release = f"/api/v1/subscriptions/{subscription.pk}/parked-keys/release/"
    released = call_api(client, "post", release, {"ordering_key": "a"}, admin_key)
    assert released.status_code == 200 and released.json()["released_message_id"] is not None
    wait_until(lambda: keyed.delivered("a") == [0, 2, 3, 4], 60, "key a released", worker)
    assert call_api(client, "post", release, {"ordering_key": "a"}, admin_key).status_code == 409
    assert Delivery.objects.get(subscription=subscription, ordering_key="a", status="dead_lettered").parks_key is False


def test_replaying_a_parked_dead_letter_sends_it_before_the_rest_of_its_key(
    client: Client, receiver: Receiver, start_worker: Callable[..., WorkerProcess], admin_key: str
) -> None:
    room, key = make_ordered_room()
    heal = threading.Event()
    keyed = KeyedReceiver(receiver, "/replay", lambda k, seq, tries: seq == 1 and not heal.is_set())
    subscription = make_subscription(room, push_url=keyed.url, ordering="park", delivery_attempts=0)
    worker = start_worker()
    replies = publish_batch(client, key, room, [("a", n) for n in range(4)])
    wait_until(lambda: Delivery.objects.filter(subscription=subscription, parks_key=True).exists(), 60,
               "key a parked", worker)

    heal.set()
    replay = call_api(client, "post", f"/api/v1/subscriptions/{subscription.pk}/dead-letters/replay/",
                      {"message_ids": [replies[1]["message_id"]]}, admin_key)
    assert replay.status_code == 202
    wait_until(lambda: keyed.delivered("a") == [0, 1, 2, 3], 60, "key a delivered after the replay", worker)
    assert keyed.attempted("a") == [0, 1, 1, 2, 3]


def test_a_pull_subscription_leases_one_event_per_key_and_an_ack_brings_the_next(
    client: Client, admin_key: str
) -> None:
    room, key = make_ordered_room()
    subscription = make_subscription(room, type=Subscription.Type.PULL, ordering="on")
    publish_batch(client, key, room, [("a", 0), ("b", 0), ("a", 1), ("a", 2), ("b", 1)])
    pull = f"/api/v1/subscriptions/{subscription.pk}/pull/"
    leased: dict[str, list[int]] = defaultdict(list)
    for _ in range(20):
        if sum(map(len, leased.values())) == 5:
            break
        messages = call_api(client, "post", pull, {"max_messages": 10, "wait_ms": 2000}, admin_key).json()["messages"]
        keys = [m["payload"]["key"] for m in messages]
        assert len(keys) == len(set(keys)), keys  # one event per key at a time
        for m in messages:
            leased[m["payload"]["key"]].append(m["payload"]["seq"])
        call_api(client, "post", f"/api/v1/subscriptions/{subscription.pk}/ack/",
                 {"ack_ids": [m["ack_id"] for m in messages]}, admin_key)
    assert dict(leased) == {"a": [0, 1, 2], "b": [0, 1]}


def test_only_an_ordered_subscriptions_events_with_a_key_are_held(client: Client) -> None:
    room, key = make_ordered_room()
    unordered = make_subscription(room, type=Subscription.Type.PULL)
    ordered = make_subscription(room, type=Subscription.Type.PULL, ordering="on")
    publish_batch(client, key, room, [("a", 0), ("a", 1)])
    body = {"event_type": "order.created", "event_version": "1", "payload": {}}
    assert call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/", body, key).status_code == 202

    def rows(subscription: Subscription) -> list[tuple[str, str]]:
        return list(Delivery.objects.filter(subscription=subscription).order_by("pk")
                    .values_list("ordering_key", "status"))

    assert all(k == "" and status != "held" for k, status in rows(unordered))
    (first_key, first), (second_key, second), (keyless_key, keyless) = rows(ordered)
    assert (first_key, second_key, keyless_key) == ("a", "a", "")
    assert first in ("pending", "queued") and second == "held" and keyless in ("pending", "queued")
