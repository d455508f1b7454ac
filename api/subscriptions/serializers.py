"""Request and reply bodies of the subscription endpoints (docs/contract.md#rest-api)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from api.errors import Conflict, unique_or_conflict
from api.rooms.serializers import (
    BREAKER_FIELDS,
    attempts_field,
    breaker_field,
    cap_ms_field,
    check_delay_cap,
    delay_ms_field,
    merged,
    multiplier_field,
)
from delivery.models import Delivery
from dovecote.inputs import BodyModelSerializer, BodySerializer
from rooms.models import Room
from subscriptions import filters
from subscriptions.models import BreakerTransition, Subscription
from subscriptions.rules import (
    MAX_FILTERS,
    MAX_IN_FLIGHT,
    MAX_PER_SECOND,
    MAX_SECRET_OVERLAP_SECONDS,
    MAX_TIMEOUT_MS,
    MIN_TIMEOUT_MS,
    PushUrlProblem,
    PushUrlRefused,
    check_push_url_of,
    in_flight_seconds_problem,
    name_taken,
    quota_problem,
)

# What the API says for each push-URL rule (subscriptions/rules.py): it names the field as JSON does.
PUSH_URL_MESSAGES = {PushUrlProblem.MISSING: "a push subscription needs a push_url",
                     PushUrlProblem.NOT_TAKEN: "a pull subscription takes no push_url"}


class PushUrlField(serializers.URLField):
    """A push URL, where an empty string means none, as null does (pull subscriptions); replies say null.

    The field takes no `allow_blank`: for a blank-able URL drf-spectacular writes a `oneOf` with
    `nullable` beside it, which OpenAPI 3.0 ignores where no `type` stands next to it, so strict
    validators refused the `null` of every pull subscription. The blank is turned into null here instead.
    """

    def run_validation(self, data: Any = empty) -> Any:
        return super().run_validation(None if data == "" else data)


class EventTypeFilterSerializer(BodySerializer):
    shape = 'Each event type is an object {"name": …, "version": …} (version optional)'

    name = serializers.CharField(max_length=200)
    version = serializers.CharField(max_length=50, required=False, allow_null=True,
                                    help_text="Absent or null: every version.")


FILTER_SCHEMA = {
    "type": "object", "nullable": True, "additionalProperties": True,
    "description": (
        "A payload filter (Hookdeck/Outpost filter syntax; docs/delivery-semantics.md#payload-filters), applied "
        "at publish to `{\"type\", \"version\", \"room\", \"correlation_id\", \"data\": payload}`: an object "
        "shaped like that document (its top-level fields are those five) whose keys walk into it and whose "
        "leaves are a value to equal or an object "
        "of operators `$eq`, `$neq`, `$gt`, `$gte`, `$lt`, `$lte`, `$in`, `$startsWith`, `$exist`, combined "
        "with `$and`, `$or`, `$not`. Every key of an object must match. Only `$exist` is true of a missing "
        f"field. At most {filters.MAX_BYTES} bytes, {filters.MAX_NODES} fields and operators, "
        f"{filters.MAX_DEPTH} nested objects, {filters.MAX_IN_VALUES} values in an `$in`. Null: no filter. "
        "A 400 names each fault by its JSON path in the filter (`$.data.total.$gte: …`)."
    ),
    "example": {"data": {"total": {"$gte": 100}, "country": {"$in": ["FR", "DE"]}},
                "$not": {"data": {"test": True}}},
}


@extend_schema_field(FILTER_SCHEMA)
class PayloadFilterField(serializers.JSONField):
    """A subscription's payload filter, checked by the rules of subscriptions/filters.py."""

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        if problems := filters.filter_problems(value):
            raise serializers.ValidationError(problems)
        return value


class BreakerTransitionSerializer(serializers.ModelSerializer):
    from_state = serializers.ChoiceField(choices=Subscription.Breaker.choices)
    to_state = serializers.ChoiceField(choices=Subscription.Breaker.choices)
    delivery_id = serializers.IntegerField(allow_null=True,
                                           help_text="The delivery whose attempt caused it, if one did.")
    attempt = serializers.IntegerField(allow_null=True, help_text="That attempt's number.")

    class Meta:
        model = BreakerTransition
        fields = ["at", "from_state", "to_state", "reason", "delivery_id", "attempt"]


class BreakerSerializer(serializers.Serializer):
    """A push subscription's circuit breaker now (docs/delivery-semantics.md#circuit-breaker)."""

    state = serializers.ChoiceField(choices=Subscription.Breaker.choices, source="breaker_state")
    reason = serializers.CharField(source="breaker_reason",
                                   help_text="Why it is in this state: its last transition's reason.")
    consecutive_failures = serializers.IntegerField(source="breaker_failures")
    opened_at = serializers.DateTimeField(source="breaker_opened_at", allow_null=True,
                                          help_text="When the current outage opened it; null when closed.")
    failed_probes = serializers.IntegerField(source="breaker_probes", help_text="Failed probes since it opened.")
    next_probe_at = serializers.DateTimeField(source="breaker_next_probe_at", allow_null=True,
                                              help_text="When open: the time of the next probe.")
    probe_schedule_ms = serializers.SerializerMethodField(
        help_text="The delays before the first probes of an outage, in ms (each failed probe doubles it).")

    @extend_schema_field(serializers.ListField(child=serializers.IntegerField()))
    def get_probe_schedule_ms(self, subscription: Subscription) -> list[int]:
        return subscription.breaker_policy.schedule()


class BreakerHistorySerializer(BreakerSerializer):
    history = serializers.SerializerMethodField(help_text="The latest transitions (at most 100), newest first.")

    @extend_schema_field(BreakerTransitionSerializer(many=True))
    def get_history(self, subscription: Subscription) -> list[dict[str, Any]]:
        return BreakerTransitionSerializer(subscription.breaker_history(100), many=True).data


class SubscriptionSerializer(BodyModelSerializer):
    """A subscription; `signing_secret` is in full only in the create and rotate-secret replies."""

    room = serializers.IntegerField(source="room_id", read_only=True)
    push_url = PushUrlField(
        max_length=2000, required=False, allow_null=True,
        help_text="Required for push, refused for pull (null; an empty string means the same). Must be "
                  "http(s) and reach a public address.",
    )
    event_types = serializers.ListField(
        child=EventTypeFilterSerializer(), max_length=MAX_FILTERS, required=False,
        help_text="Empty: every event of the room. Each filter must name an event type the room has.",
    )
    filter = PayloadFilterField(source="payload_filter", required=False, allow_null=True)
    ordering = serializers.ChoiceField(
        choices=Subscription.Ordering.values, required=False,
        help_text="`on`: the events of one `ordering_key` one at a time, in publish order; a dead letter lets its "
                  "key move on. `park`: the same, but a dead letter parks its key until it is replayed or the key "
                  "released. `off` (default): no order.")
    delivery_delay_ms = delay_ms_field(required=False, allow_null=True, help_text="Null: the room's value.")
    delivery_delay_multiplier = multiplier_field(required=False, allow_null=True,
                                                 help_text="Null: the room's value.")
    delivery_attempts = attempts_field(required=False, allow_null=True, help_text="Null: the room's value.")
    max_delivery_delay_ms = cap_ms_field(required=False, help_text="Null: the room's value.")
    max_in_flight = serializers.IntegerField(min_value=1, max_value=MAX_IN_FLIGHT, required=False)
    timeout_ms = serializers.IntegerField(min_value=MIN_TIMEOUT_MS, max_value=MAX_TIMEOUT_MS, required=False)
    max_per_second = serializers.IntegerField(
        min_value=1, max_value=MAX_PER_SECOND, required=False, allow_null=True,
        help_text="Push: POSTs per second at most, across every worker, beside `max_in_flight`; null: no limit.")
    throttled_until = serializers.DateTimeField(
        read_only=True, allow_null=True,
        help_text="Push: a 429 or 503 with Retry-After pauses the whole subscription until this time.")
    destination = serializers.CharField(read_only=True, help_text="The broker queue, `room-{r}::subscription-{s}`.")
    waiting = serializers.SerializerMethodField(
        help_text="Events stored for it and not yet delivered or pulled (pending, queued, retrying, or held "
                  "behind their ordering key). A paused or disabled subscription keeps them until it is resumed, "
                  "or until the room's expiration expires them.")
    breaker_failure_threshold = breaker_field("breaker_failure_threshold", required=False, allow_null=True)
    breaker_failure_ratio = breaker_field("breaker_failure_ratio", required=False, allow_null=True)
    breaker_window_s = breaker_field("breaker_window_s", required=False, allow_null=True)
    breaker_probe_delay_ms = breaker_field("breaker_probe_delay_ms", required=False, allow_null=True)
    breaker_disable_after_s = breaker_field("breaker_disable_after_s", required=False, allow_null=True)
    breaker_on_disable = serializers.ChoiceField(
        choices=Subscription.OnDisable.choices, required=False,
        help_text="When the breaker disables the subscription: `hold` keeps what is on its way for a resume; "
                  "`dead_letter` dead-letters it with the reason (replayable).")
    breaker = BreakerSerializer(source="*", read_only=True,
                                help_text="The circuit breaker now (its history: GET /subscriptions/{id}/breaker/); "
                                          "a pull subscription's stays closed.")
    signing_secret = serializers.SerializerMethodField(
        help_text="Push only: in full in the create and rotate-secret replies, else masked."
    )

    previous_secret_until = serializers.SerializerMethodField(
        help_text="Push only: after a rotation, until when the previous secret still signs each push (a second "
                  "signature in `webhook-signature`); null when only the current secret signs."
    )

    class Meta:
        model = Subscription
        fields = ["id", "room", "name", "type", "push_url", "event_types", "filter", "ordering", "delivery_delay_ms",
                  "delivery_delay_multiplier", "delivery_attempts", "max_delivery_delay_ms", "max_in_flight",
                  "timeout_ms", "max_per_second", "throttled_until", *BREAKER_FIELDS, "breaker_on_disable", "status",
                  "status_reason", "destination", "waiting",
                  "signing_secret", "previous_secret_until", "breaker", "last_error", "last_error_at", "created_at",
                  "updated_at"]
        read_only_fields = ["id", "status", "status_reason", "last_error", "last_error_at", "created_at",
                            "updated_at"]
        extra_kwargs = {"name": {"validators": []}}
        validators = []  # a taken name is a 409 (see validate), not a 400

    @property
    def room_object(self) -> Room:
        return self.instance.room if self.instance is not None else self.context["room"]

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_signing_secret(self, subscription: Subscription) -> str | None:
        if subscription.type != Subscription.Type.PUSH:
            return None
        if self.context.get("reveal_secret"):
            return subscription.signing_secret
        return subscription.masked_secret()

    @extend_schema_field(serializers.IntegerField(min_value=0))
    def get_waiting(self, subscription: Subscription) -> int:
        counted = getattr(subscription, "waiting", None)  # annotated by the list (delivery.models.waiting_count)
        if counted is not None:
            return counted
        return Delivery.objects.filter(subscription=subscription).waiting().count()

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_previous_secret_until(self, subscription: Subscription) -> str | None:
        until = subscription.old_secret_until()
        return serializers.DateTimeField().to_representation(until) if until else None

    def to_representation(self, subscription: Subscription) -> dict[str, Any]:
        data = super().to_representation(subscription)
        data["push_url"] = data["push_url"] or None
        return data

    def validate_event_types(self, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        filters = [{"name": f["name"], **({"version": f["version"]} if f.get("version") else {})} for f in filters]
        if unknown := self.room_object.unknown_event_types(filters):
            raise serializers.ValidationError(unknown)
        return filters

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "push_url" in attrs:
            attrs["push_url"] = attrs["push_url"] or ""
        if self.instance is not None and attrs.get("type", self.instance.type) != self.instance.type:
            raise serializers.ValidationError({"type": ["cannot be changed; create a new subscription instead"]})
        self.check_push_url(merged(self, attrs, "type"), merged(self, attrs, "push_url"), "push_url" in attrs)
        check_delay_cap(merged(self, attrs, "delivery_delay_ms"), merged(self, attrs, "max_delivery_delay_ms"))
        if problem := in_flight_seconds_problem(merged(self, attrs, "type"), merged(self, attrs, "max_in_flight"),
                                                merged(self, attrs, "timeout_ms")):
            raise serializers.ValidationError({"max_in_flight": [problem], "timeout_ms": [problem]})
        name = attrs.get("name")
        own = self.instance.pk if self.instance else None
        if name is not None and name_taken(self.room_object, name, excluding=own):
            raise Conflict({"name": [self.taken(name)]})
        return attrs

    def check_push_url(self, kind: str, url: str, given: bool) -> None:
        """Apply the push-URL rules; the address is checked again only when this write gives a URL."""
        try:
            check_push_url_of(kind, url, check_address=given)
        except PushUrlRefused as refused:
            message = PUSH_URL_MESSAGES.get(refused.problem, f"refused: {refused.reason}")
            raise serializers.ValidationError({"push_url": [message]}) from None

    def create(self, validated_data: dict[str, Any]) -> Subscription:
        with unique_or_conflict("name", self.taken(validated_data["name"])):
            room = Room.objects.select_for_update().get(pk=self.context["room"].pk)  # creates queue up here
            if problem := quota_problem(room):
                raise Conflict({"room": [problem]})
            return Subscription.objects.create(room=self.context["room"], **validated_data)

    def update(self, instance: Subscription, validated_data: dict[str, Any]) -> Subscription:
        with unique_or_conflict("name", self.taken(validated_data.get("name", instance.name))):
            return super().update(instance, validated_data)

    def taken(self, name: str) -> str:
        return f"room {self.room_object.pk} already has a subscription named {name!r}"


class RotateSecretSerializer(BodySerializer):
    overlap_seconds = serializers.IntegerField(
        min_value=0, max_value=MAX_SECRET_OVERLAP_SECONDS, required=False,
        help_text="How long the previous secret keeps signing each push beside the new one (0: it stops at once). "
                  "Absent: DOVECOTE_SECRET_OVERLAP_SECONDS (24 hours unless configured).",
    )


class SubscriptionDeletedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    dead_lettered = serializers.IntegerField(help_text="Unsettled deliveries dead-lettered by the deletion.")
    detail = serializers.CharField()
