"""REST endpoints of the publish path and the message log (CONTRACT §3)."""

from __future__ import annotations

import uuid

from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, generics, pagination, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from delivery.models import Delivery, DeliveryAttempt, Message
from delivery.publish import Event, PublishRejected, publish
from delivery.serializers import (
    DeliveryRowSerializer,
    MessageDetailSerializer,
    PublishReplySerializer,
    PublishSerializer,
)
from rooms.auth import api_key, check_room_access
from rooms.models import Room


class PublishView(APIView):
    @extend_schema(request=PublishSerializer, responses={202: PublishReplySerializer})
    def post(self, request: Request, room_id: int) -> Response:
        room = get_object_or_404(Room, pk=room_id)
        check_room_access(request, room)
        data = PublishSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        correlation_id = fields.get("correlation_id") or request.headers.get("X-Correlation-ID", "")
        event = Event(
            event_type=fields["event_type"], event_version=fields["event_version"], payload=fields["payload"],
            correlation_id=correlation_id[:200], idempotency_key=fields.get("idempotency_key"),
        )
        try:
            published = publish(room, event)
        except PublishRejected as rejected:
            raise exceptions.ValidationError(rejected.errors) from None
        return Response(published.as_reply(), status=status.HTTP_202_ACCEPTED)


class NewestFirst(pagination.CursorPagination):
    ordering = ("-created_at", "-id")
    page_size_query_param = "page_size"
    max_page_size = 500


class MessageLogFilters(serializers.Serializer):
    room = serializers.IntegerField(required=False)
    subscription = serializers.IntegerField(required=False)
    correlation_id = serializers.CharField(required=False)
    status = serializers.ChoiceField(choices=Delivery.Status.values, required=False)
    event_type = serializers.CharField(required=False)
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)


@extend_schema(parameters=[MessageLogFilters])
class MessageLogView(generics.ListAPIView):
    """One row per destination, newest first."""

    serializer_class = DeliveryRowSerializer
    pagination_class = NewestFirst

    def get_queryset(self) -> QuerySet[Delivery]:
        filters = MessageLogFilters(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        given = filters.validated_data
        rows = Delivery.objects.select_related("message")
        key = api_key(self.request)
        if not key.is_admin:
            rows = rows.filter(message__room__in=key.rooms.all())
        lookups = {
            "room": "message__room_id", "subscription": "subscription_id",
            "correlation_id": "message__correlation_id", "status": "status",
            "event_type": "message__event_type", "since": "created_at__gte", "until": "created_at__lt",
        }
        return rows.filter(**{lookups[name]: value for name, value in given.items()})


class MessageDetailView(APIView):
    @extend_schema(responses=MessageDetailSerializer)
    def get(self, request: Request, message_id: uuid.UUID) -> Response:
        timeline = Prefetch("deliveries__attempt_log", queryset=DeliveryAttempt.objects.order_by("started_at", "id"))
        message = get_object_or_404(
            Message.objects.select_related("room").prefetch_related(
                Prefetch("deliveries", queryset=Delivery.objects.order_by("pk")), timeline
            ),
            pk=message_id,
        )
        check_room_access(request, message.room)
        return Response(MessageDetailSerializer(message).data)
