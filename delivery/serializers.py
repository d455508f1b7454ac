from __future__ import annotations

from rest_framework import serializers

from delivery.models import Delivery, DeliveryAttempt, Message


class PublishSerializer(serializers.Serializer):
    event_type = serializers.CharField(max_length=200)
    event_version = serializers.CharField(max_length=50)
    payload = serializers.JSONField()
    correlation_id = serializers.CharField(max_length=200, required=False)
    idempotency_key = serializers.CharField(max_length=200, required=False)


BATCH_LIMIT = 500


class BatchPublishSerializer(serializers.Serializer):
    messages = PublishSerializer(many=True, allow_empty=False, max_length=BATCH_LIMIT)


class DestinationSerializer(serializers.Serializer):
    subscription_id = serializers.IntegerField(allow_null=True)
    destination = serializers.CharField()


class PublishReplySerializer(serializers.Serializer):
    message_id = serializers.UUIDField()
    correlation_id = serializers.CharField()
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
                  "event_version", "status", "attempts", "next_attempt_at", "last_error", "created_at",
                  "updated_at"]


class AttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = DeliveryAttempt
        fields = ["attempt", "started_at", "duration_ms", "outcome", "status_code", "error", "next_delay_ms"]


class DestinationDetailSerializer(serializers.ModelSerializer):
    subscription = serializers.IntegerField(source="subscription_id", allow_null=True)
    timeline = AttemptSerializer(source="attempt_log", many=True)

    class Meta:
        model = Delivery
        fields = ["subscription", "destination", "status", "attempts", "next_attempt_at", "last_status_code",
                  "last_error", "updated_at", "timeline"]


class MessageDetailSerializer(serializers.ModelSerializer):
    message_id = serializers.UUIDField(source="id")
    room = serializers.IntegerField(source="room_id")
    destinations = DestinationDetailSerializer(source="deliveries", many=True)

    class Meta:
        model = Message
        fields = ["message_id", "correlation_id", "room", "event_type", "event_version", "payload",
                  "idempotency_key", "created_at", "expires_at", "destinations"]
