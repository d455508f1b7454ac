"""Push sessions starting together claim and adopt their subscriptions in a few statements, never twice."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from delivery.models import PushClaim
from delivery.push import claims
from subscriptions.models import Subscription
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_hundred_subscriptions_are_claimed_in_one_transaction_of_a_few_statements() -> None:
    room = make_room()
    subscriptions = [make_subscription(room) for _ in range(100)]
    paused = make_subscription(room, status=Subscription.Status.PAUSED)
    pull = make_subscription(room, type=Subscription.Type.PULL)
    with CaptureQueriesContext(connection) as queries:
        started = claims.start_sessions([s.pk for s in subscriptions] + [paused.pk, pull.pk])
    assert sorted(started) == sorted(s.pk for s in subscriptions)
    assert len(queries) <= 8, [q["sql"][:120] for q in queries]
    assert PushClaim.objects.filter(subscription__in=subscriptions).count() == 100
    assert not PushClaim.objects.filter(subscription__in=[paused, pull]).exists()
    assert claims.start_sessions([s.pk for s in subscriptions]) == []  # each has its session now


def test_sessions_starting_together_go_to_the_workers_a_few_to_a_task(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[str, tuple]] = []
    monkeypatch.setattr(claims.current_app, "send_task", lambda name, args: sent.append((name, args)))
    room = make_room()
    subscriptions = [make_subscription(room) for _ in range(20)]
    started = claims.start_sessions([s.pk for s in subscriptions])

    assert [len(args[0]) for _, args in sent] == [8, 8, 4], sent
    assert {name for name, _ in sent} == {"delivery.tasks.deliver_push_sessions"}
    starts = [start for _, (batch,) in sent for start in batch]
    assert sorted(starts) == sorted(PushClaim.objects.filter(subscription__in=subscriptions)
                                    .values_list("subscription_id", "token"))
    assert sorted(started) == sorted(s.pk for s in subscriptions)


def test_a_lapsed_claim_is_replaced_and_a_live_one_kept() -> None:
    room = make_room()
    lapsed, live = make_subscription(room), make_subscription(room)
    PushClaim.objects.create(subscription=lapsed, token="gone", until=timezone.now() - timedelta(seconds=1))
    PushClaim.objects.create(subscription=live, token="here", until=timezone.now() + timedelta(seconds=5))
    assert claims.start_sessions([lapsed.pk, live.pk]) == [lapsed.pk]
    assert list(PushClaim.objects.filter(subscription=live).values_list("token", flat=True)) == ["here"]
    assert "gone" not in PushClaim.objects.filter(subscription=lapsed).values_list("token", flat=True)


@contextmanager
def held_in_another_transaction(take: Callable[[], object]) -> Iterator[None]:
    """Run `take` in a transaction on another thread's connection, and keep that transaction open inside the block."""
    taken, release, failed = threading.Event(), threading.Event(), []

    def hold() -> None:
        try:
            with transaction.atomic():
                take()
                taken.set()
                release.wait(30)
        except Exception as error:  # noqa: BLE001 - reported by the test's thread
            failed.append(error)
            taken.set()
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert taken.wait(30) and not failed, failed or "the other transaction never took its locks"
        yield
    finally:
        release.set()
        holder.join(30)


@pytest.mark.parametrize("no_key", [True, False], ids=["another claimer", "a change or delete"])
def test_a_subscription_whose_row_another_transaction_holds_is_left_for_the_next_dispatch(no_key: bool) -> None:
    room = make_room()
    held, free = make_subscription(room), make_subscription(room)
    with held_in_another_transaction(
            lambda: Subscription.objects.select_for_update(no_key=no_key).filter(pk=held.pk).first()):
        assert claims.start_sessions([held.pk, free.pk]) == [free.pk]  # not a wait for the lock
    assert claims.start_sessions([held.pk, free.pk]) == [held.pk]


def test_a_publish_committing_deliveries_to_a_subscription_does_not_keep_its_session_from_starting() -> None:
    """A new delivery's foreign-key check holds FOR KEY SHARE on its subscription's row until its transaction ends.

    Under 500 publishes a second to a new subscription one publish or another was always committing, and the
    relay's start of the session skipped the row: the first deliveries waited up to a second for beat's dispatch.
    """
    room = make_room()
    subscription = make_subscription(room)

    def publish_with_its_key_checked() -> None:
        make_delivery(make_message(room), subscription)
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the deferred check runs now, as at a commit

    with held_in_another_transaction(publish_with_its_key_checked):
        with transaction.atomic():  # the publish holds the row: a FOR UPDATE claimer would skip it
            assert not Subscription.objects.select_for_update(skip_locked=True).filter(pk=subscription.pk).exists()
        assert claims.start_sessions([subscription.pk]) == [subscription.pk]
    assert PushClaim.objects.filter(subscription=subscription).count() == 1


def test_adopting_a_batch_takes_each_claim_once_and_gives_back_the_surplus() -> None:
    room = make_room()
    fresh, twice, running = (make_subscription(room) for _ in range(3))
    engine = uuid.uuid4().hex
    until = timezone.now() + timedelta(seconds=15)
    for subscription, token in ((fresh, "start-1"), (twice, "start-2"), (twice, "start-3"), (running, "start-4"),
                                (running, engine)):
        PushClaim.objects.create(subscription=subscription, token=token, until=until)
    requests = [(fresh.pk, "start-1"), (twice.pk, "start-2"), (twice.pk, "start-3"), (running.pk, "start-4"),
                (fresh.pk, "never-claimed")]
    with CaptureQueriesContext(connection) as queries:
        held = claims.adopt(requests, engine)
    assert len(queries) <= 8, [q["sql"][:120] for q in queries]
    assert [h.subscription.pk if h else None for h in held] == [fresh.pk, twice.pk, None, None, None]
    tokens = {(c.subscription_id, c.token) for c in PushClaim.objects.filter(subscription__room=room)}
    # start-3 is a second session asked for one subscription in one engine: its claim is given back;
    # start-4 asks for a subscription the engine runs already.
    assert tokens == {(fresh.pk, engine), (twice.pk, engine), (running.pk, engine)}


def test_adopting_forty_sessions_takes_as_many_statements_as_adopting_one() -> None:
    room = make_room()
    engine = uuid.uuid4().hex
    until = timezone.now() + timedelta(seconds=15)
    subscriptions = [make_subscription(room) for _ in range(41)]
    for subscription in subscriptions:
        PushClaim.objects.create(subscription=subscription, token=f"start-{subscription.pk}", until=until)
    with CaptureQueriesContext(connection) as one:
        assert claims.adopt([(subscriptions[0].pk, f"start-{subscriptions[0].pk}")], engine)[0] is not None
    with CaptureQueriesContext(connection) as forty:
        held = claims.adopt([(s.pk, f"start-{s.pk}") for s in subscriptions[1:]], engine)
    assert all(h is not None for h in held)
    assert len(forty) == len(one), ([q["sql"][:120] for q in one], [q["sql"][:120] for q in forty])


def test_an_idle_session_stays_only_for_a_retry_due_within_the_lookahead() -> None:
    room = make_room()
    soon, later, none = make_subscription(room), make_subscription(room), make_subscription(room)
    message = make_message(room)
    now = timezone.now()
    make_delivery(message, soon, status="retrying", next_attempt_at=now + claims.LOOKAHEAD - timedelta(seconds=1))
    make_delivery(message, later, status="retrying", next_attempt_at=now + claims.LOOKAHEAD + timedelta(seconds=5))
    make_delivery(message, none, status="queued")
    assert claims.retries_due_soon([soon.pk, later.pk, none.pk]) == {soon.pk}
    assert claims.retries_due_soon([later.pk, none.pk]) == set()


def test_beats_dispatch_finds_each_subscription_that_needs_a_session_once() -> None:
    room = make_room()
    backlog, retry_soon, retry_later, running, lapsed, paused = (make_subscription(room) for _ in range(6))
    Subscription.objects.filter(pk=paused.pk).update(status=Subscription.Status.PAUSED)
    pull = make_subscription(room, type=Subscription.Type.PULL)
    now = timezone.now()
    for _ in range(3):  # one subscription however many deliveries wait (Meta.ordering once made DISTINCT useless)
        message = make_message(room)
        for subscription in (backlog, running, lapsed, paused, pull):
            make_delivery(message, subscription, status="queued")
    message = make_message(room)
    make_delivery(message, retry_soon, status="retrying", next_attempt_at=now + claims.LOOKAHEAD - timedelta(seconds=1))
    make_delivery(message, retry_later, status="retrying",
                  next_attempt_at=now + claims.LOOKAHEAD + timedelta(seconds=5))
    make_delivery(make_message(room), retry_later, status="delivered")
    PushClaim.objects.create(subscription=running, token="here", until=now + timedelta(seconds=5))
    PushClaim.objects.create(subscription=lapsed, token="gone", until=now - timedelta(seconds=1))

    with CaptureQueriesContext(connection) as queries:
        due = claims.subscriptions_with_due_work(now)
    assert sorted(due) == sorted([backlog.pk, retry_soon.pk, lapsed.pk]), due
    assert len(queries) == 1
    assert sorted(claims.retries_due_soon([retry_soon.pk, retry_soon.pk, retry_later.pk])) == [retry_soon.pk]
