"""The push path's two steps (delivery/push/steps.py) leave the same rows whichever executor runs them.

The engine picks the executor once: the ledger on PostgreSQL, the ORM executor on any other database
(the embedded demo's SQLite). Here both run on the real PostgreSQL and broker, a push session in this
process, against a real receiver: fresh claims, a failure retried, an ordered key whose success
releases its next event, and unordered successes all end as the same timeline and statuses.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.test import Client

from delivery.models import Delivery, DeliveryAttempt
from delivery.push.engine import PushEngine
from delivery.push.ledger import Ledger
from delivery.push.steps import OrmExecutor
from rooms.models import ApiKey
from subscriptions.models import Subscription
from tests.factories import make_event_type, make_push_claim, make_room, make_subscription
from tests.receiver import Receiver, Reply

pytestmark = pytest.mark.django_db(transaction=True)  # the relay's and the push engine's threads read the rows

EVENTS = [("k", 0), ("k", 1), ("k", 2), ("", 10), ("", 11)]  # (ordering key, number): "" publishes without a key
FAIL_FIRST = {0, 10}  # the numbers answered 500 on their first POST, 204 on the next


def publish(client: Client, key: str, room_id: int) -> dict[int, str]:
    """Publish EVENTS in one batch; their message ids by number."""
    messages: list[dict[str, Any]] = []
    for ordering_key, number in EVENTS:
        message: dict[str, Any] = {"event_type": "order.created", "event_version": "1", "payload": {"n": number}}
        if ordering_key:
            message["ordering_key"] = ordering_key
        messages.append(message)
    response = client.post(f"/api/v1/rooms/{room_id}/messages/batch/", json.dumps({"messages": messages}),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 202, response.content
    return {number: reply["message_id"]
            for (_, number), reply in zip(EVENTS, response.json()["messages"], strict=True)}


def deliver_all(subscription: Subscription, executor: type, timeout: float = 90) -> list[str]:
    """Run push sessions in this process, as a worker's engine would, until nothing is left to deliver."""
    statuses: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        statuses = sorted(Delivery.objects.filter(subscription=subscription).values_list("status", flat=True))
        if statuses == ["delivered"] * len(EVENTS):
            return statuses
        engine = PushEngine()
        assert type(engine.steps.executor) is executor, engine.steps.executor
        engine.session_budget_s, engine.session_idle_s = 5.0, 1.0
        try:
            engine.run_session(subscription.pk, make_push_claim(subscription), timeout=30)
        finally:
            engine.stop(timeout=10)
    return statuses


@pytest.mark.parametrize("executor", [Ledger, OrmExecutor])
def test_the_push_steps_leave_the_same_rows_with_the_ledger_and_with_the_orm_executor(
        client: Client, receiver: Receiver, monkeypatch: pytest.MonkeyPatch, executor: type) -> None:
    if executor is OrmExecutor:  # as on a database other than PostgreSQL
        monkeypatch.setattr(Ledger, "for_this_database", classmethod(lambda cls, broker: None))
    tries: dict[int, int] = {}

    def reply(n: int) -> Reply:
        number = json.loads(receiver.requests("/steps")[n - 1].body)["data"]["n"]
        tries[number] = tries.get(number, 0) + 1
        return Reply(500 if number in FAIL_FIRST and tries[number] == 1 else 204)

    room = make_room(delivery_delay_ms=50, delivery_delay_multiplier=1.0, delivery_attempts=3)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.script("/steps", reply), ordering="on",
                                     breaker_failure_threshold=0, breaker_failure_ratio=0)
    message_ids = publish(client, key, room.pk)

    statuses = deliver_all(subscription, executor)

    seen = [json.loads(request.body)["data"]["n"] for request in receiver.requests("/steps")]
    assert statuses == ["delivered"] * len(EVENTS), f"statuses {statuses}; the receiver saw {seen}"
    timeline = {number: list(DeliveryAttempt.objects.filter(delivery__message_id=message_id)
                             .order_by("attempt").values_list("attempt", "outcome", "status_code"))
                for number, message_id in message_ids.items()}
    retried = [(1, "failure", 500), (2, "success", 204)]
    assert timeline == {0: retried, 1: [(1, "success", 204)], 2: [(1, "success", 204)], 10: retried,
                        11: [(1, "success", 204)]}, f"the receiver saw {seen}"
    ordered = [number for number in seen if number in (0, 1, 2)]
    assert ordered == [0, 0, 1, 2], f"the ordered key's POSTs came as {ordered}"
