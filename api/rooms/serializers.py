"""Request and reply bodies of the room and event-type endpoints (docs/contract.md#rest-api)."""

from __future__ import annotations

import math
from typing import Any

from rest_framework import serializers

from api.errors import Conflict, unique_or_conflict
from dovecote.inputs import BodyModelSerializer
from rooms.models import EventType, Room
from rooms.rules import (
    MAX_ATTEMPTS,
    MAX_BREAKER_THRESHOLD,
    MAX_BREAKER_WINDOW_S,
    MAX_DELAY_MS,
    MAX_DISABLE_AFTER_S,
    MAX_MULTIPLIER,
    MAX_PROBE_DELAY_MS,
    MAX_RETENTION_MS,
    MAX_SPAN_MS,
    MIN_BREAKER_WINDOW_S,
    MIN_DISABLE_AFTER_S,
    MIN_PROBE_DELAY_MS,
    MIN_RETENTION_MS,
    cap_below_delay,
    event_type_quota_problem,
)
from rooms.schemas import SchemaRefused, check_event_type_schema


class FiniteFloatField(serializers.FloatField):
    """A float that is a number: DRF's FloatField lets "nan" and "inf" through its min/max checks."""

    def to_internal_value(self, data: Any) -> float:
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            self.fail("invalid")
        return value


def delay_ms_field(**options: Any) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=0, max_value=MAX_DELAY_MS, **options)


def multiplier_field(**options: Any) -> FiniteFloatField:
    return FiniteFloatField(min_value=1.0, max_value=MAX_MULTIPLIER, **options)


def attempts_field(**options: Any) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=0, max_value=MAX_ATTEMPTS, **options)


def cap_ms_field(**options: Any) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=0, max_value=MAX_SPAN_MS, allow_null=True, **options)


def breaker_field(name: str, **options: Any) -> serializers.Field:
    """One of the circuit breaker's settings (subscriptions/breaker_rules.py), for a room or a subscription."""
    if name == "breaker_failure_ratio":
        return FiniteFloatField(
            min_value=0.0, max_value=1.0, **options,
            help_text="Failed share of the attempts in the window (at least 20 of them) that opens the breaker; "
                      "0: this rule never opens it.")
    low, high, text = {
        "breaker_failure_threshold": (0, MAX_BREAKER_THRESHOLD,
                                      "Consecutive failed attempts that open the breaker; 0: never on this rule."),
        "breaker_window_s": (MIN_BREAKER_WINDOW_S, MAX_BREAKER_WINDOW_S, "The failure ratio's window, in seconds."),
        "breaker_probe_delay_ms": (MIN_PROBE_DELAY_MS, MAX_PROBE_DELAY_MS,
                                   ("The wait before the first probe of an open breaker; doubled after each failed "
                                    "probe, at most 10 minutes.")),
        "breaker_disable_after_s": (MIN_DISABLE_AFTER_S, MAX_DISABLE_AFTER_S,
                                    "A breaker open this long disables the subscription (default 5 days)."),
    }[name]
    return serializers.IntegerField(min_value=low, max_value=high, help_text=text, **options)


BREAKER_FIELDS = ["breaker_failure_threshold", "breaker_failure_ratio", "breaker_window_s", "breaker_probe_delay_ms",
                  "breaker_disable_after_s"]


def check_delay_cap(delay_ms: int | None, cap_ms: int | None) -> None:
    """Refuse a cap below the delay it caps (rooms/rules.py)."""
    if cap_below_delay(delay_ms, cap_ms):
        raise serializers.ValidationError({"max_delivery_delay_ms": [
            f"must be at least delivery_delay_ms ({delay_ms}); use delivery_delay_multiplier 1 for a fixed delay"
        ]})


def merged(serializer: serializers.ModelSerializer, attrs: dict[str, Any], field: str) -> Any:
    """Return `field` as it will be after this (maybe partial) write."""
    if field in attrs:
        return attrs[field]
    if serializer.instance is not None:
        return getattr(serializer.instance, field)
    return serializer.Meta.model._meta.get_field(field).get_default()


class RoomSerializer(BodyModelSerializer):
    address = serializers.CharField(read_only=True, help_text="The broker address, `room-{id}`.")
    message_expiration_ms = serializers.IntegerField(
        min_value=0, max_value=MAX_SPAN_MS, allow_null=True, required=False,
        help_text="Messages not delivered within this many ms expire; null or 0: never.",
    )
    delivery_delay_ms = delay_ms_field(required=False, help_text="d: the base of the redelivery delay.")
    delivery_delay_multiplier = multiplier_field(required=False, help_text="m: redelivery k waits d × m^k ms.")
    delivery_attempts = attempts_field(required=False, help_text="Redeliveries after the first attempt; 0: none.")
    max_delivery_delay_ms = cap_ms_field(
        required=False, help_text="Cap on the redelivery delay, at least delivery_delay_ms; null: no cap."
    )
    retention_ms = serializers.IntegerField(
        min_value=MIN_RETENTION_MS, max_value=MAX_RETENTION_MS, allow_null=True, required=False,
        help_text=(f"How long settled messages stay in PostgreSQL before they move to the archive, in ms, "
                   f"{MIN_RETENTION_MS} (1 hour) to {MAX_RETENTION_MS} (3650 days); null: the default "
                   f"(DOVECOTE_RETENTION, 7 days unless set)."),
    )
    breaker_failure_threshold = breaker_field("breaker_failure_threshold", required=False)
    breaker_failure_ratio = breaker_field("breaker_failure_ratio", required=False)
    breaker_window_s = breaker_field("breaker_window_s", required=False)
    breaker_probe_delay_ms = breaker_field("breaker_probe_delay_ms", required=False)
    breaker_disable_after_s = breaker_field("breaker_disable_after_s", required=False)

    class Meta:
        model = Room
        fields = ["id", "name", "description", "message_expiration_ms", "delivery_delay_ms",
                  "delivery_delay_multiplier", "delivery_attempts", "max_delivery_delay_ms", "retention_ms",
                  *BREAKER_FIELDS, "address", "created_at", "updated_at"]
        read_only_fields = ["id", "created_at", "updated_at"]
        extra_kwargs = {"name": {"validators": []}}  # a taken name is a 409 (see validate), not a 400

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        check_delay_cap(merged(self, attrs, "delivery_delay_ms"), merged(self, attrs, "max_delivery_delay_ms"))
        name = attrs.get("name")
        others = Room.objects.exclude(pk=self.instance.pk) if self.instance else Room.objects.all()
        if name is not None and others.filter(name=name).exists():
            raise Conflict({"name": [self.taken(name)]})
        return attrs

    def create(self, validated_data: dict[str, Any]) -> Room:
        with unique_or_conflict("name", self.taken(validated_data["name"])):
            return super().create(validated_data)

    def update(self, instance: Room, validated_data: dict[str, Any]) -> Room:
        with unique_or_conflict("name", self.taken(validated_data.get("name", instance.name))):
            return super().update(instance, validated_data)

    @staticmethod
    def taken(name: str) -> str:
        return f"a room named {name!r} already exists"


class RoomDeletedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    subscriptions_deleted = serializers.IntegerField()
    messages_deleted = serializers.IntegerField()
    detail = serializers.CharField()


class EventTypeSerializer(BodyModelSerializer):
    """An event type of the room in the serializer's context (`room`)."""

    room = serializers.IntegerField(source="room_id", read_only=True)
    version = serializers.CharField(max_length=50, required=False, default="1")
    schema = serializers.JSONField(
        required=False, allow_null=True,
        help_text="A JSON Schema (draft 2020-12) object that payloads must satisfy; null: any payload.",
    )

    class Meta:
        model = EventType
        fields = ["id", "room", "name", "version", "schema", "created_at"]
        read_only_fields = ["id", "created_at"]
        validators = []  # a taken name and version is a 409 (see validate), not a 400

    def validate_schema(self, schema: Any) -> Any:
        if schema is None:
            return None
        try:
            check_event_type_schema(schema)
        except SchemaRefused as refused:
            raise serializers.ValidationError(str(refused)) from None
        return schema

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        room = self.context["room"]
        if room.has_event_type(attrs["name"], attrs["version"]):
            raise Conflict({"name": [self.taken(room, attrs)]})
        return attrs

    def create(self, validated_data: dict[str, Any]) -> EventType:
        room = self.context["room"]
        with unique_or_conflict("name", self.taken(room, validated_data)):
            Room.objects.select_for_update().get(pk=room.pk)  # creates in a room queue up here: the quota holds
            if problem := event_type_quota_problem(room):
                raise Conflict({"room": [problem]})
            return EventType.objects.create(room=room, **validated_data)

    @staticmethod
    def taken(room: Room, attrs: dict[str, Any]) -> str:
        return f"room {room.pk} already has event type {attrs['name']!r} version {attrs['version']!r}"
