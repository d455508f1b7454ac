from __future__ import annotations

from rest_framework import serializers

from analytics.models import ArchivedMessage
from delivery.models import Delivery, DeliveryAttempt, Message
from dovecote.inputs import BodySerializer


class PublishSerializer(BodySerializer):
    event_type = serializers.CharField(max_length=200)
    event_version = serializers.CharField(max_length=50)
    payload = serializers.JSONField()
    correlation_id = serializers.CharField(max_length=200, required=False)
    idempotency_key = serializers.CharField(max_length=200, required=False)
    ordering_key = serializers.CharField(
        max_length=200, required=False,
        help_text="Subscriptions with `ordering` on get the events of one key one at a time, in publish order.")


BATCH_LIMIT = 500


class BatchPublishSerializer(BodySerializer):
    messages = PublishSerializer(many=True, allow_empty=False, max_length=BATCH_LIMIT)


class DestinationSerializer(serializers.Serializer):
    subscription_id = serializers.IntegerField(allow_null=True)
    destination = serializers.CharField()


class PublishReplySerializer(serializers.Serializer):
    message_id = serializers.UUIDField()
    correlation_id = serializers.CharField()
    destination_count = serializers.IntegerField(
        help_text="How many destinations the event was sent to (paused subscriptions too: they hold it); 0: it "
                  "matched no subscription and is in the message log as `unroutable` until it is re-published.")
    destinations = DestinationSerializer(many=True)


class BatchReplySerializer(serializers.Serializer):
    messages = PublishReplySerializer(many=True)


class DeliveryRowSerializer(serializers.ModelSerializer):
    """One row of the message log: a message on its way to one destination."""

    message_id = serializers.UUIDField(source="message.id")
    correlation_id = serializers.CharField(source="message.correlation_id")
    room = serializers.IntegerField(source="message.room_id")
    subscription = serializers.IntegerField(source="subscription_id", allow_null=True)
    event_type = serializers.CharField(source="message.event_type")
    event_version = serializers.CharField(source="message.event_version")

    class Meta:
        model = Delivery
        fields = ["message_id", "correlation_id", "room", "subscription", "destination", "event_type",
                  "event_version", "status", "attempts", "next_attempt_at", "last_error", "ordering_key",
                  "parks_key", "created_at", "updated_at"]


class AttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = DeliveryAttempt
        fields = ["life", "attempt", "started_at", "duration_ms", "outcome", "status_code", "error", "next_delay_ms"]


class DestinationDetailSerializer(serializers.ModelSerializer):
    subscription = serializers.IntegerField(source="subscription_id", allow_null=True)
    timeline = AttemptSerializer(source="attempt_log", many=True)

    class Meta:
        model = Delivery
        fields = ["subscription", "destination", "status", "attempts", "next_attempt_at", "last_status_code",
                  "last_error", "ordering_key", "parks_key", "updated_at", "timeline"]


class MessageDetailSerializer(serializers.ModelSerializer):
    message_id = serializers.UUIDField(source="id")
    room = serializers.IntegerField(source="room_id")
    destinations = DestinationDetailSerializer(source="deliveries", many=True)

    class Meta:
        model = Message
        fields = ["message_id", "correlation_id", "room", "event_type", "event_version", "payload",
                  "idempotency_key", "ordering_key", "created_at", "expires_at", "destinations"]


class ArchiveLocationSerializer(serializers.Serializer):
    messages = serializers.CharField(help_text="The Parquet folder of the message's row.")
    deliveries = serializers.CharField()
    attempts = serializers.CharField()
    sends = serializers.CharField()


class ArchivedMessageSerializer(serializers.Serializer):
    """What is left in PostgreSQL of a message retention moved to the archive (docs/analytics.md)."""

    message_id = serializers.UUIDField()
    room = serializers.IntegerField(source="room_id")
    status = serializers.CharField(default="archived", help_text="Always `archived`.")
    archived_at = serializers.DateTimeField()
    archive_batch = serializers.IntegerField(source="batch_id", help_text="The archive batch that moved it.")
    archive_location = serializers.SerializerMethodField(
        help_text="Where its rows are: one Parquet folder per table, under DOVECOTE_ARCHIVE_URL.")

    def get_archive_location(self, archived: ArchivedMessage) -> dict[str, str]:
        return {name: archived.location(name) for name in ("messages", "deliveries", "attempts", "sends")}


class PullSerializer(BodySerializer):
    max_messages = serializers.IntegerField(min_value=1, max_value=1000, default=10)
    lease_ms = serializers.IntegerField(min_value=100, max_value=12 * 3600 * 1000, default=30_000)
    wait_ms = serializers.IntegerField(min_value=0, max_value=20_000, default=0)


class PulledMessageSerializer(serializers.Serializer):
    ack_id = serializers.CharField()
    message_id = serializers.UUIDField(source="delivery.message_id")
    correlation_id = serializers.CharField(source="delivery.message.correlation_id")
    event_type = serializers.CharField(source="delivery.message.event_type")
    event_version = serializers.CharField(source="delivery.message.event_version")
    payload = serializers.JSONField()
    attempt = serializers.IntegerField()
    lease_expires_at = serializers.DateTimeField()


class PullReplySerializer(serializers.Serializer):
    messages = PulledMessageSerializer(many=True)


class AckSerializer(BodySerializer):
    ack_ids = serializers.ListField(child=serializers.CharField(max_length=200), allow_empty=False, max_length=1000)


class NackSerializer(AckSerializer):
    action = serializers.ChoiceField(choices=["retry", "dead_letter"], default="retry")
    delay_ms = serializers.IntegerField(min_value=0, max_value=365 * 24 * 3600 * 1000, required=False,
                                        allow_null=True)

    def validate(self, attrs: dict) -> dict:
        if attrs.get("delay_ms") is not None and attrs["action"] != "retry":
            raise serializers.ValidationError({"delay_ms": ["only a retry takes a delay"]})
        return attrs


class ExtendSerializer(AckSerializer):
    lease_ms = serializers.IntegerField(min_value=100, max_value=12 * 3600 * 1000, default=30_000)


class AckFailureSerializer(serializers.Serializer):
    ack_id = serializers.CharField()
    error = serializers.CharField()


class SettledSerializer(serializers.Serializer):
    done = serializers.ListField(child=serializers.CharField(), help_text="The ack ids it applied to.")
    failed = AckFailureSerializer(many=True)


class DeadLetterSerializer(serializers.ModelSerializer):
    message_id = serializers.UUIDField()
    correlation_id = serializers.CharField(source="message.correlation_id")
    event_type = serializers.CharField(source="message.event_type")
    event_version = serializers.CharField(source="message.event_version")
    dead_lettered_at = serializers.DateTimeField(source="updated_at")

    class Meta:
        model = Delivery
        fields = ["message_id", "correlation_id", "event_type", "event_version", "attempts", "replays",
                  "last_status_code", "last_error", "created_at", "dead_lettered_at"]


class DeadLetterFilters(serializers.Serializer):
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)
    error = serializers.CharField(required=False, help_text="Text the last error contains.")


class DeadLetterSelection(BodySerializer):
    message_ids = serializers.ListField(child=serializers.UUIDField(), required=False, allow_empty=False,
                                        max_length=10_000)
    all = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs: dict) -> dict:
        if bool(attrs.get("message_ids")) == bool(attrs.get("all")):
            raise serializers.ValidationError({"message_ids": ['give either "message_ids" or "all": true']})
        return attrs


class DeadLetterActionReplySerializer(serializers.Serializer):
    count = serializers.IntegerField()


class ParkedKeySerializer(serializers.Serializer):
    ordering_key = serializers.CharField()
    message_id = serializers.UUIDField(source="delivery.message_id", help_text="The dead letter that parks it.")
    correlation_id = serializers.CharField(source="delivery.message.correlation_id")
    dead_lettered_at = serializers.DateTimeField(source="delivery.updated_at")
    waiting = serializers.IntegerField(help_text="Events of the key held behind it.")


class ReleaseKeySerializer(BodySerializer):
    ordering_key = serializers.CharField(max_length=200)


class ReleasedKeySerializer(serializers.Serializer):
    ordering_key = serializers.CharField()
    released_message_id = serializers.UUIDField(allow_null=True,
                                                help_text="The next event of the key, now sent; null: none waited.")


class WhoAmISerializer(serializers.Serializer):
    name = serializers.CharField()
    admin = serializers.BooleanField()
    rooms = serializers.ListField(child=serializers.IntegerField(), allow_null=True,
                                  help_text="The rooms a non-admin key may use; null for admin keys.")
