"""State rules on the models, against the real database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, transaction

from delivery.models import Delivery
from rooms.models import ApiKey
from subscriptions.models import Subscription
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db


def test_a_subscription_without_overrides_uses_the_rooms_settings() -> None:
    room = make_room(delivery_delay_ms=2000, delivery_delay_multiplier=1.5, delivery_attempts=4,
                     max_delivery_delay_ms=60_000)
    policy = make_subscription(room).retry_policy
    assert (policy.delay_ms, policy.multiplier, policy.attempts, policy.max_delay_ms) == (2000, 1.5, 4, 60_000)


def test_each_subscription_override_beats_the_rooms_value() -> None:
    room = make_room(delivery_delay_ms=2000, delivery_delay_multiplier=1.5, delivery_attempts=4)
    subscription = make_subscription(
        room, delivery_delay_ms=100, delivery_delay_multiplier=3.0, delivery_attempts=0, max_delivery_delay_ms=500
    )
    policy = subscription.retry_policy
    assert (policy.delay_ms, policy.multiplier, policy.attempts, policy.max_delay_ms) == (100, 3.0, 0, 500)


def test_an_override_of_zero_is_an_override_not_unset() -> None:
    room = make_room(delivery_delay_ms=2000, delivery_attempts=5)
    policy = make_subscription(room, delivery_delay_ms=0, delivery_attempts=0).retry_policy
    assert (policy.delay_ms, policy.attempts) == (0, 0)


def test_destination_names_follow_the_broker_layout() -> None:
    room = make_room()
    subscription = make_subscription(room)
    assert room.address == f"room-{room.pk}"
    assert subscription.destination == f"room-{room.pk}::subscription-{subscription.pk}"


@pytest.mark.parametrize(
    ("filters", "event", "matches"),
    [
        ([], ("order.created", "1"), True),
        ([{"name": "order.created"}], ("order.created", "7"), True),
        ([{"name": "order.created", "version": "2"}], ("order.created", "1"), False),
        ([{"name": "order.created", "version": "2"}], ("order.created", "2"), True),
        ([{"name": "order.paid"}], ("order.created", "1"), False),
    ],
)
def test_event_type_filters_match_by_name_and_optional_version(filters, event, matches) -> None:
    assert make_subscription(make_room(), event_types=filters).matches(*event) is matches


def test_a_new_push_subscription_gets_a_standard_webhooks_secret() -> None:
    subscription = make_subscription(make_room())
    assert subscription.signing_secret.startswith("whsec_")
    old = subscription.signing_secret
    assert subscription.rotate_signing_secret() != old


def test_disabling_keeps_the_reason() -> None:
    subscription = make_subscription(make_room())
    subscription.disable("410 Gone from https://example.com/hook")
    subscription.refresh_from_db()
    assert subscription.status == Subscription.Status.DISABLED
    assert subscription.status_reason.startswith("410 Gone")


def test_room_expiration_of_zero_or_null_never_expires() -> None:
    published = datetime(2026, 1, 1, tzinfo=UTC)
    assert make_room(message_expiration_ms=None).expires_at(published) is None
    assert make_room(message_expiration_ms=0).expires_at(published) is None
    assert make_room(message_expiration_ms=1500).expires_at(published) == published + timedelta(milliseconds=1500)


def test_a_message_is_expired_from_its_expiry_on() -> None:
    message = make_message(make_room(), expires_at=datetime(2026, 1, 1, tzinfo=UTC))
    assert not message.is_expired(datetime(2025, 12, 31, 23, 59, tzinfo=UTC))
    assert message.is_expired(datetime(2026, 1, 1, tzinfo=UTC))
    assert not make_message(make_room()).is_expired()


def test_a_message_has_one_delivery_per_subscription() -> None:
    room = make_room()
    subscription = make_subscription(room)
    message = make_message(room)
    make_delivery(message, subscription)
    with pytest.raises(IntegrityError), transaction.atomic():
        make_delivery(message, subscription)


def test_final_statuses_are_the_settled_ones() -> None:
    room = make_room()
    delivery = make_delivery(make_message(room), make_subscription(room))
    assert not delivery.is_final
    for status in (Delivery.Status.DELIVERED, Delivery.Status.ACKED, Delivery.Status.DEAD_LETTERED,
                   Delivery.Status.EXPIRED):
        delivery.status = status
        assert delivery.is_final


def test_the_database_refuses_a_multiplier_below_one() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        make_room(delivery_delay_multiplier=0.5)


def test_event_type_schema_errors_name_the_field() -> None:
    event_type = make_event_type(
        make_room(),
        schema={"type": "object", "required": ["order_id"], "properties": {"order_id": {"type": "integer"}}},
    )
    assert event_type.schema_errors({"order_id": 3}) == []
    assert event_type.schema_errors({"order_id": "x"}) == ["order_id: 'x' is not of type 'integer'"]
    assert event_type.schema_errors({}) == ["(root): 'order_id' is a required property"]


def test_api_keys_are_stored_hashed_and_scoped_to_rooms() -> None:
    mine, other = make_room(), make_room()
    key, plaintext = ApiKey.issue("billing", rooms=[mine])
    assert plaintext not in key.key_hash
    assert ApiKey.authenticate(plaintext) == key
    assert ApiKey.authenticate(plaintext + "x") is None
    assert key.can_use_room(mine.pk) and not key.can_use_room(other.pk)


def test_a_key_authenticated_by_its_statement_is_the_key_the_orm_reads() -> None:
    room = make_room()
    key, plaintext = ApiKey.issue("billing", rooms=[room])
    key.mark_used(datetime(2026, 1, 1, tzinfo=UTC))
    found = ApiKey.authenticate(plaintext)
    read = ApiKey.objects.get(pk=key.pk)
    fields = [field.attname for field in ApiKey._meta.concrete_fields]
    assert {name: getattr(found, name) for name in fields} == {name: getattr(read, name) for name in fields}
    assert found._state.db == read._state.db and not found._state.adding
    assert list(found.rooms.all()) == [room] and found.can_use_room(room.pk)
    found.name = "renamed"
    found.save(update_fields=["name"])  # a row it read, updated in place
    assert ApiKey.objects.get(pk=key.pk).name == "renamed" and ApiKey.objects.count() == 1
    key.revoke()
    assert ApiKey.authenticate(plaintext) is None
    assert ApiKey.authenticate("not a key") is None and ApiKey.authenticate("") is None


def test_an_admin_key_may_use_every_room_until_revoked() -> None:
    key, plaintext = ApiKey.issue("ops", is_admin=True)
    room = make_room()
    assert key.can_use_room(room.pk)
    key.revoke()
    assert not key.can_use_room(room.pk)
    assert ApiKey.authenticate(plaintext) is None


def test_a_keys_last_use_is_written_at_most_once_a_minute() -> None:
    key, _ = ApiKey.issue("busy", is_admin=True)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    key.mark_used(start)
    key.mark_used(start + timedelta(seconds=30))
    key.refresh_from_db()
    assert key.last_used_at == start
    key.mark_used(start + timedelta(seconds=61))
    key.refresh_from_db()
    assert key.last_used_at == start + timedelta(seconds=61)


@pytest.mark.parametrize("schema", [{"$ref": "#"}, {"$ref": "https://schemas.example/order.json"}])
def test_a_schema_that_cannot_be_applied_rejects_payloads_with_a_reason(schema: dict) -> None:
    event_type = make_event_type(make_room(), schema=schema)
    [error] = event_type.schema_errors({"order_id": 1})
    assert error.startswith("the schema of order.created v1 cannot be applied")
