"""The rules of a received frame (delivery/frame_rules.py, applied by delivery/attempts.py), on the in-memory
broker: stale copies, crashes, poison."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from delivery import frames
from delivery.attempts import Arrival, Attempt, start_attempts
from delivery.broker import Broker, connect
from delivery.frame_rules import POISON_LIMIT
from delivery.models import Delivery, DeliveryAttempt, SendRecord
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker() -> Iterator[Broker]:
    connection = connect(f"memory://{uuid.uuid4().hex}")
    yield connection
    connection.close()


@pytest.fixture
def delivery() -> Delivery:
    room = make_room()
    return make_delivery(make_message(room), make_subscription(room, timeout_ms=1000))


def prepare(subscription, broker: Broker, consumer, frame) -> Attempt | None:
    """Judge one frame: the attempt to make, or None when it was settled at once."""
    [attempt] = start_attempts(broker, [Arrival(subscription, consumer, frame)])
    return attempt


def prepare_burst(subscription, broker: Broker, consumer, burst: list) -> tuple[list[Attempt], int]:
    """Judge frames together: the attempts to make, and how many frames were settled at once."""
    results = start_attempts(broker, [Arrival(subscription, consumer, frame) for frame in burst])
    jobs = [result for result in results if result is not None]
    return jobs, len(results) - len(jobs)


def receive_attempt(broker: Broker, delivery: Delivery, attempt: int):
    """Put attempt `attempt` of `delivery` on the broker and take it off again."""
    broker.send(frames.frame_for(delivery, attempt=attempt, delay_ms=0, next_delay_ms=None,
                                 body=frames.envelope(delivery.message)))
    consumer = broker.consumer(delivery.destination, prefetch=10)
    return consumer, consumer.receive(timeout=1)


def test_a_fresh_attempt_is_claimed_and_started(broker: Broker, delivery: Delivery) -> None:
    consumer, frame = receive_attempt(broker, delivery, 1)
    job = prepare(delivery.subscription, broker, consumer, frame)
    assert job is not None and job.attempt == 1
    delivery.refresh_from_db()
    assert delivery.attempts == 1 and delivery.attempt_started_at is not None


def test_a_stale_copy_of_a_recorded_attempt_is_dropped(broker: Broker, delivery: Delivery) -> None:
    Delivery.objects.filter(pk=delivery.pk).update(attempts=2, status="retrying")
    consumer, frame = receive_attempt(broker, delivery, 1)
    assert prepare(delivery.subscription, broker, consumer, frame) is None
    consumer.close()
    assert broker.consumer(delivery.destination).receive(timeout=0.2) is None  # acked, not requeued


def test_a_frame_of_a_settled_delivery_is_dropped(broker: Broker, delivery: Delivery) -> None:
    Delivery.objects.filter(pk=delivery.pk).update(attempts=1, status="delivered")
    consumer, frame = receive_attempt(broker, delivery, 1)
    assert prepare(delivery.subscription, broker, consumer, frame) is None
    assert not DeliveryAttempt.objects.exists()


def test_a_frame_from_another_database_is_dropped(broker: Broker, delivery: Delivery) -> None:
    consumer, frame = receive_attempt(broker, delivery, 1)
    forged = type(frame)(frame.destination, frame.body, {**frame.headers, frames.MESSAGE_ID: str(uuid.uuid4())},
                         frame.broker_message_id, frame.redelivered, frame.ack_id)
    assert prepare(delivery.subscription, broker, consumer, forged) is None
    delivery.refresh_from_db()
    assert delivery.attempts == 0


def test_an_attempt_still_under_way_elsewhere_is_looked_at_again_later(broker: Broker, delivery: Delivery) -> None:
    Delivery.objects.filter(pk=delivery.pk).update(attempts=1, attempt_started_at=timezone.now())
    consumer, frame = receive_attempt(broker, delivery, 1)
    assert prepare(delivery.subscription, broker, consumer, frame) is None
    assert consumer.receive(timeout=0.3) is None  # deferred by timeout + grace, not redelivered at once
    assert not DeliveryAttempt.objects.exists()


def test_an_attempt_whose_worker_died_is_logged_as_crashed_and_retried(broker: Broker, delivery: Delivery) -> None:
    long_ago = timezone.now() - timedelta(minutes=5)
    Delivery.objects.filter(pk=delivery.pk).update(attempts=1, attempt_started_at=long_ago)
    consumer, frame = receive_attempt(broker, delivery, 1)
    job = prepare(delivery.subscription, broker, consumer, frame)
    assert job is not None and job.attempt == 1
    delivery.refresh_from_db()
    assert delivery.crashed_attempts == 1
    assert list(DeliveryAttempt.objects.values_list("attempt", "outcome")) == [(1, "crashed")]


def test_a_message_that_keeps_killing_workers_is_dead_lettered(broker: Broker, delivery: Delivery) -> None:
    long_ago = timezone.now() - timedelta(minutes=5)
    Delivery.objects.filter(pk=delivery.pk).update(
        attempts=1, attempt_started_at=long_ago, crashed_attempts=POISON_LIMIT - 1
    )
    consumer, frame = receive_attempt(broker, delivery, 1)
    assert prepare(delivery.subscription, broker, consumer, frame) is None
    delivery.refresh_from_db()
    assert delivery.status == "dead_lettered"
    assert delivery.last_error == f"poison message: the worker died {POISON_LIMIT} times while delivering it"
    assert SendRecord.objects.filter(delivery=delivery, kind="dead_letter").exists()
    assert consumer.receive(0.3) is None  # the frame was acked; PostgreSQL holds the dead letter


def test_a_message_expiring_on_its_way_is_marked_expired_without_an_attempt(
    broker: Broker, delivery: Delivery
) -> None:
    consumer, frame = receive_attempt(broker, delivery, 1)
    delivery.message.expires_at = timezone.now() - timedelta(milliseconds=1)
    delivery.message.save()
    assert prepare(delivery.subscription, broker, consumer, frame) is None
    delivery.refresh_from_db()
    assert delivery.status == "expired" and delivery.attempts == 0


def test_a_sweep_that_cannot_reach_the_broker_leaves_its_rows_for_the_next_sweep(delivery: Delivery) -> None:
    from django.test import override_settings

    from delivery import outbox

    Delivery.objects.filter(pk=delivery.pk).update(updated_at=timezone.now() - timedelta(minutes=1))
    with override_settings(STOMP_URL="stomp://admin:admin@127.0.0.1:9"):
        assert outbox.sweep_pending() == 0
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.claimed_until is None
    with override_settings(STOMP_URL=f"memory://{uuid.uuid4().hex}"):
        assert outbox.sweep_pending() == 1
    delivery.refresh_from_db()
    assert delivery.status == "queued"


def test_retiring_a_subscription_dead_letters_what_was_unsettled_and_deletes_its_queue(delivery: Delivery) -> None:
    from django.test import override_settings

    from delivery.subscription_teardown import delete_queue, retire_deliveries

    assert retire_deliveries(delivery.subscription_id, "subscription deleted") == 1
    delivery.refresh_from_db()
    assert delivery.status == "dead_lettered" and delivery.last_error == "subscription deleted"
    with override_settings(STOMP_URL=f"memory://{uuid.uuid4().hex}"):
        from delivery.broker.shared import shared_broker

        shared_broker().send_many([frames.frame_for(delivery, attempt=1, delay_ms=0, next_delay_ms=None,
                                                    body=b"{}")] * 3)
        assert [q.messages for q in shared_broker().queues(delivery.destination)] == [3]
        assert delete_queue(delivery.destination) is True
        assert shared_broker().queues(delivery.destination) == []
        assert delete_queue(delivery.destination) is False


def test_a_copy_claimed_before_its_sender_records_the_failure_keeps_its_claim(
    broker: Broker, delivery: Delivery
) -> None:
    from delivery import settle
    from delivery.transports import PushResult

    Delivery.objects.filter(pk=delivery.pk).update(attempts=1, attempt_started_at=timezone.now(), status="leased")
    delivery.refresh_from_db()
    consumer = broker.consumer(delivery.destination, prefetch=10)
    # The sender has sent the copy of attempt 2 but not yet written "retrying": a consumer claims it first.
    broker.send(frames.frame_for(delivery, attempt=2, delay_ms=0, next_delay_ms=None, body=b"{}"))
    job = prepare(delivery.subscription, broker, consumer, consumer.receive(timeout=1))
    assert job is not None and job.attempt == 2
    result = PushResult("failure", 5, 500, "HTTP 500")
    settle.schedule_retries(broker, [(settle.Failure(delivery, b"{}", 1, timezone.now(), result), 100)],
                            delivery.subscription.retry_policy)
    delivery.refresh_from_db()
    assert delivery.attempts == 2 and delivery.attempt_started_at is not None  # attempt 1's late record changed nothing
    assert delivery.status == "leased"


# ---- a burst of frames judged together (`attempts.start_attempts`) ---------------------------------

def test_a_burst_applies_the_same_rules_with_two_queries(
    broker: Broker, delivery: Delivery, django_assert_max_num_queries
) -> None:
    subscription = delivery.subscription
    fresh = [make_delivery(make_message(subscription.room), subscription) for _ in range(5)]
    settled = make_delivery(make_message(subscription.room), subscription)
    Delivery.objects.filter(pk=settled.pk).update(attempts=1, status="delivered")
    consumer = broker.consumer(subscription.destination, prefetch=20)
    for item in [*fresh, settled]:
        broker.send(frames.frame_for(item, attempt=1, delay_ms=0, next_delay_ms=None, body=b"{}"))
    burst = [consumer.receive(timeout=1) for _ in range(6)]
    with django_assert_max_num_queries(2):  # one SELECT for all, one claim UPDATE
        jobs, settled_now = prepare_burst(subscription, broker, consumer, burst)
    assert sorted(job.delivery.pk for job in jobs) == sorted(item.pk for item in fresh)
    assert settled_now == 1
    assert Delivery.objects.filter(pk__in=[item.pk for item in fresh], attempts=1,
                                   attempt_started_at__isnull=False).count() == 5


def test_a_duplicate_in_the_same_burst_is_judged_after_the_first_frame(broker: Broker, delivery: Delivery) -> None:
    consumer = broker.consumer(delivery.destination, prefetch=10)
    for _ in range(2):
        broker.send(frames.frame_for(delivery, attempt=1, delay_ms=0, next_delay_ms=None, body=b"{}"))
    burst = [consumer.receive(timeout=1) for _ in range(2)]
    jobs, settled_now = prepare_burst(delivery.subscription, broker, consumer, burst)
    # The first claims attempt 1; the second finds it under way and is put back to be looked at later.
    assert len(jobs) == 1 and settled_now == 1
    assert SendRecord.objects.filter(delivery=delivery, kind="recheck").count() == 1


def test_a_claim_lost_to_another_worker_is_deferred_not_started(
    broker: Broker, delivery: Delivery, monkeypatch: pytest.MonkeyPatch
) -> None:
    from delivery import attempts

    subscription = delivery.subscription
    other = make_delivery(make_message(subscription.room), subscription)
    consumer = broker.consumer(subscription.destination, prefetch=10)
    for item in (delivery, other):
        broker.send(frames.frame_for(item, attempt=1, delay_ms=0, next_delay_ms=None, body=b"{}"))
    burst = [consumer.receive(timeout=1) for _ in range(2)]
    original = attempts.claim_attempts

    def raced(ids: list[int], attempt: int, now) -> set[int]:
        # Another worker claims `other` between this session's SELECT and its UPDATE.
        Delivery.objects.filter(pk=other.pk).update(attempts=1, attempt_started_at=timezone.now())
        return original(ids, attempt, now)

    monkeypatch.setattr(attempts, "claim_attempts", raced)
    # Judged one by one (as on SQLite): PostgreSQL's one-statement claim leaves no gap for the race.
    monkeypatch.setattr(type(Delivery.objects), "claim_fresh", lambda manager, claims, now: None)
    jobs, settled_now = prepare_burst(subscription, broker, consumer, burst)
    assert [job.delivery.pk for job in jobs] == [delivery.pk] and settled_now == 1
    assert SendRecord.objects.filter(delivery=other, kind="recheck").count() == 1


def test_failures_settled_together_send_their_copies_together(broker: Broker, delivery: Delivery) -> None:
    from delivery import settle
    from delivery.broker import SendFailed
    from delivery.transports import PushResult

    subscription = delivery.subscription
    others = [make_delivery(make_message(subscription.room), subscription) for _ in range(3)]
    last = make_delivery(make_message(subscription.room), subscription)
    final = subscription.retry_policy.attempts + 1  # the first attempt, then `attempts` retries
    for item, attempt in [*((d, 1) for d in (delivery, *others)), (last, final)]:
        Delivery.objects.filter(pk=item.pk).update(attempts=attempt, attempt_started_at=timezone.now())
    failed = PushResult("failure", 5, 500, "HTTP 500")
    now = timezone.now()
    failures = [settle.Failure(d, b"{}", 1, now, failed) for d in (delivery, *others)]
    failures.append(settle.Failure(last, b"{}", final, now, failed))
    sent_together = []
    real_send_many = broker.send_many

    def send_many(messages):
        sent_together.append(len(messages))
        real_send_many(messages[:2])
        if len(messages) > 1:
            raise SendFailed("receipts missing", confirmed=[0, 1])

    broker.send_many = send_many
    statuses = settle.settle_failures(broker, failures, subscription.retry_policy)
    assert statuses == ["retrying", "retrying", None, None, "dead_lettered"]
    assert sent_together == [4]  # the four retry copies in one pipelined send; a dead letter sends nothing
    by_pk = {d.pk: d for d in Delivery.objects.filter(pk__in=[f.delivery.pk for f in failures])}
    assert [by_pk[f.delivery.pk].status for f in failures] == ["retrying", "retrying", "pending", "pending",
                                                               "dead_lettered"]
    # Unconfirmed copies leave no trace: their attempts are still under way, their frames come back.
    assert not DeliveryAttempt.objects.filter(delivery__in=[others[1], others[2]]).exists()
    assert SendRecord.objects.filter(kind="retry").count() == 2


def test_the_one_statement_claim_takes_exactly_what_the_frame_rules_would_claim(broker: Broker) -> None:
    from delivery.frame_rules import Action, judge
    from delivery.models import FreshClaim

    room = make_room()
    subscription, other = make_subscription(room, timeout_ms=1000), make_subscription(room)
    now = timezone.now()
    cases = {  # name: (delivery fields, frame attempt, frame's subscription, a foreign message id)
        "fresh": ({}, 1, subscription, False),
        "retry due": ({"attempts": 1, "status": "retrying"}, 2, subscription, False),
        "settled": ({"attempts": 1, "status": "delivered"}, 2, subscription, False),
        "stale copy": ({"attempts": 2, "status": "retrying"}, 1, subscription, False),
        "recorded": ({"attempts": 1, "status": "retrying"}, 1, subscription, False),
        "under way": ({"attempts": 1, "attempt_started_at": now}, 1, subscription, False),
        "crashed": ({"attempts": 1, "attempt_started_at": now - timedelta(minutes=5)}, 1, subscription, False),
        "leased": ({"attempts": 1, "status": "leased"}, 1, subscription, False),
        "leased, next": ({"attempts": 1, "status": "leased"}, 2, subscription, False),
        "expired": ({"expired": True}, 1, subscription, False),
        "other subscription": ({}, 1, other, False),
        "other database": ({}, 1, subscription, True),
        "dead letter": ({"attempts": 3, "status": "dead_lettered"}, 4, subscription, False),
    }
    claims, expected = [], set()
    for name, (fields, attempt, frame_subscription, foreign) in cases.items():
        message = make_message(room)
        if fields.pop("expired", False):
            message.expires_at = now - timedelta(seconds=1)
            message.save()
        delivery = make_delivery(message, subscription)
        Delivery.objects.filter(pk=delivery.pk).update(**fields)
        state = Delivery.objects.filter(pk=delivery.pk).states()[delivery.pk]
        message_id = uuid.uuid4() if foreign else message.id
        verdict = judge(state, subscription_id=frame_subscription.pk, message_id=str(message_id), attempt=attempt,
                        timeout_ms=1000, now=now)
        if verdict.action is Action.CLAIM:
            expected.add(name)
        claims.append((name, FreshClaim(delivery.pk, attempt, frame_subscription.pk, message_id)))

    claimed = Delivery.objects.claim_fresh([claim for _, claim in claims], now)

    assert claimed is not None, "PostgreSQL claims in one statement"
    assert {name for name, claim in claims if claim.delivery_id in claimed} == expected
    assert expected == {"fresh", "retry due", "leased, next"}
    for state in claimed.values():
        assert state.attempt_started_at == now and state.message.correlation_id
