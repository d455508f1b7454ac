"""A push engine's renewal (every second) rereads only the subscriptions whose row or room was written since.

Rebuilding every held subscription each second was a quarter of a worker's CPU with a thousand
sessions. The row versions are PostgreSQL's: any write counts, whoever makes it.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models.signals import post_init
from django.utils import timezone

from delivery.models import PushClaim
from delivery.push import claims
from delivery.push.budget import SocketBudget
from delivery.push.session import PushSession
from rooms.models import Room
from subscriptions.models import Subscription
from tests.factories import make_room, make_subscription

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def built() -> Iterator[list[int]]:
    """The pks of the Subscription objects built meanwhile."""
    pks: list[int] = []

    def count(sender: type[Subscription], instance: Subscription, **_: Any) -> None:
        pks.append(instance.pk)

    post_init.connect(count, sender=Subscription)
    yield pks
    post_init.disconnect(count, sender=Subscription)


def adopted(subscriptions: list[Subscription], engine: str) -> dict[int, claims.Held]:
    until = timezone.now() + timedelta(seconds=15)
    PushClaim.objects.bulk_create(PushClaim(subscription=s, token=f"start-{s.pk}", until=until) for s in subscriptions)
    held = claims.adopt([(s.pk, f"start-{s.pk}") for s in subscriptions], engine)
    assert all(h is not None and h.subscription is not None for h in held), held
    return {h.subscription.pk: h for h in held if h is not None and h.subscription is not None}


def reports(held: dict[int, claims.Held]) -> dict[int, claims.Report]:
    return {pk: claims.Report(sized_for=1, hot=False, version=h.version) for pk, h in held.items()}


def test_a_renewal_rebuilds_no_subscription_that_nothing_wrote(built: list[int]) -> None:
    room = make_room()
    subscriptions = [make_subscription(room, max_in_flight=8) for _ in range(50)]
    engine = uuid.uuid4().hex
    held = adopted(subscriptions, engine)
    built.clear()
    renewed = claims.renew(engine, reports(held))
    assert sorted(renewed) == sorted(s.pk for s in subscriptions)
    assert built == [], f"rebuilt {len(built)} subscriptions nothing had written"
    assert all(h.subscription is None and h.version == held[pk].version and (h.sessions, h.share) == (1, 8)
               for pk, h in renewed.items()), renewed


def test_a_write_to_a_subscription_or_its_room_rereads_it_and_only_it(built: list[int]) -> None:
    first, second = make_room(), make_room()
    throttled, edited, untouched = (make_subscription(first) for _ in range(3))
    in_second_room = make_subscription(second)
    engine = uuid.uuid4().hex
    held = adopted([throttled, edited, untouched, in_second_room], engine)

    Subscription.objects.throttle(throttled.pk, timezone.now() + timedelta(minutes=1))  # a QuerySet.update
    Subscription.objects.filter(pk=edited.pk).update(max_in_flight=3)
    Room.objects.filter(pk=second.pk).update(delivery_attempts=2)  # a room setting, by a bare UPDATE
    built.clear()
    renewed = claims.renew(engine, reports(held))

    reread = {pk for pk, h in renewed.items() if h.subscription is not None}
    assert reread == {throttled.pk, edited.pk, in_second_room.pk}, renewed
    assert sorted(built) == sorted(reread)
    assert renewed[throttled.pk].subscription.throttled_until is not None  # type: ignore[union-attr]
    assert renewed[edited.pk].share == 3 and renewed[edited.pk].subscription.max_in_flight == 3  # type: ignore[union-attr]
    assert renewed[in_second_room.pk].subscription.room.delivery_attempts == 2  # type: ignore[union-attr]
    assert all(renewed[pk].version != held[pk].version for pk in reread)
    assert renewed[untouched.pk].version == held[untouched.pk].version

    again = claims.renew(engine, reports(renewed | {untouched.pk: held[untouched.pk]}))
    assert all(h.subscription is None for h in again.values()), "a second renewal reread what it had read"


def test_a_deleted_subscription_is_no_longer_held() -> None:
    room = make_room()
    kept, deleted = make_subscription(room), make_subscription(room)
    engine = uuid.uuid4().hex
    held = adopted([kept, deleted], engine)
    deleted.delete()
    assert set(claims.renew(engine, reports(held))) == {kept.pk}


class _Engine:
    budget = SocketBudget(total=10, per_room=10, per_subscription=10)


def test_a_session_keeps_its_own_subscription_when_it_was_not_reread_and_takes_a_paused_one() -> None:
    room = make_room()
    subscription = make_subscription(room)
    engine = uuid.uuid4().hex
    held = adopted([subscription], engine)[subscription.pk]
    session = PushSession(_Engine(), subscription.pk, engine)  # type: ignore[arg-type]
    session.subscription, session.version = held.subscription, held.version
    own = session.subscription
    assert own is not None
    own.throttled_until = timezone.now() + timedelta(seconds=30)  # what the session heeded from a 429

    session.refreshed(claims.renew(engine, {subscription.pk: session.report()})[subscription.pk])
    assert session.subscription is own and session.accepting

    subscription.pause(by="user")
    renewed = claims.renew(engine, {subscription.pk: session.report()})[subscription.pk]
    assert renewed.subscription is not None and renewed.subscription.status == Subscription.Status.PAUSED
    session.refreshed(renewed)
    assert not session.accepting, "the session went on after its subscription was paused"


def test_a_renewal_binds_its_subscriptions_as_one_array_however_many() -> None:
    """Django's `IN` binds one parameter per id: at a thousand sessions that cost the worker more CPU every
    second than the statements themselves (and each burst held the GIL from the sessions' event loop)."""
    room = make_room()
    subscriptions = [make_subscription(room) for _ in range(120)]
    engine = uuid.uuid4().hex
    held = adopted(subscriptions, engine)
    Subscription.objects.filter(pk__in=[s.pk for s in subscriptions[:60]]).update(max_in_flight=4)  # reread half
    statements: list[tuple[str, int]] = []

    def count_parameters(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append((sql, len(params or ())))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count_parameters):
        renewed = claims.renew(engine, reports(held))
    assert sorted(renewed) == sorted(s.pk for s in subscriptions)
    assert sum(h.subscription is not None for h in renewed.values()) == 60
    assert {h.share for h in renewed.values()} == {4, 10}, "each still sees its own max_in_flight"
    # Each statement's parameters: its arrays, the engine's token and its times, however many subscriptions.
    assert max(count for _, count in statements) <= 6, [
        (sql[:120], count) for sql, count in statements if count > 6]


def test_a_renewal_that_rereads_nothing_is_one_statement() -> None:
    """The ORM's three writes and three reads each second were a seventh of a worker's CPU in the bench's
    fan-out and fairness runs, on the GIL the sessions' event loop shares: on PostgreSQL the renewal writes
    and reads in one statement, and a second one rereads the subscriptions written since (none here)."""
    if connection.vendor != "postgresql":
        pytest.skip("the one statement is PostgreSQL's")
    room = make_room()
    subscriptions = [make_subscription(room, max_in_flight=8) for _ in range(20)]
    engine, other = uuid.uuid4().hex, uuid.uuid4().hex
    held = adopted(subscriptions, engine)
    PushClaim.objects.create(subscription=subscriptions[0], token=other, until=timezone.now() + timedelta(seconds=5),
                             sized_for=2)  # a second session of the first, on another worker
    statements: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        renewed = claims.renew(engine, {pk: claims.Report(sized_for=2 if pk == subscriptions[0].pk else 1,
                                                          hot=pk == subscriptions[1].pk, version=h.version)
                                        for pk, h in held.items()})
    assert len(statements) == 1, statements
    assert all(h.subscription is None for h in renewed.values()), renewed
    assert (renewed[subscriptions[0].pk].sessions, renewed[subscriptions[0].pk].share) == (2, 4)
    assert {(h.sessions, h.share) for pk, h in renewed.items() if pk != subscriptions[0].pk} == {(1, 8)}
    rows = dict(PushClaim.objects.filter(token=engine).values_list("subscription_id", "hot"))
    assert [pk for pk, hot in rows.items() if hot] == [subscriptions[1].pk], rows
    assert PushClaim.objects.get(token=engine, subscription=subscriptions[0]).sized_for == 2


def test_a_renewal_commits_while_a_subscriptions_delete_holds_its_row() -> None:
    """A renewal wrote each claim twice in one transaction, so PostgreSQL checked the claims' foreign key at
    COMMIT, waiting for the subscription's row: a delete holding it (and then waiting for the claim) deadlocked."""
    room = make_room()
    subscriptions = [make_subscription(room, max_in_flight=8) for _ in range(3)]
    engine = uuid.uuid4().hex
    held = adopted(subscriptions, engine)
    renewed = threading.Event()

    def renew() -> None:
        try:
            claims.renew(engine, {pk: claims.Report(sized_for=2, hot=True, version=h.version)
                                  for pk, h in list(held.items())[:2]})
            renewed.set()
        finally:
            connection.close()

    with transaction.atomic():  # as delivery/actions.py delete_subscription holds it before deleting the claims
        list(Subscription.objects.select_for_update().filter(pk=subscriptions[0].pk).values_list("pk", flat=True))
        thread = threading.Thread(target=renew)
        thread.start()
        committed = renewed.wait(60)
    thread.join()
    assert committed, "the renewal waited for the subscription's row lock"
    rows = sorted(PushClaim.objects.filter(token=engine).values_list("subscription_id", "sized_for", "hot"))
    assert rows == sorted([(pk, 2, True) for pk in list(held)[:2]] + [(list(held)[2], 1, False)]), rows
