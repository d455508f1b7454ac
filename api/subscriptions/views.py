"""REST endpoints for subscriptions (docs/contract.md#rest-api).

Admin keys and keys of the subscription's room may do everything here; other keys get 403.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import exceptions, filters, generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import usable_room, usable_subscription
from api.errors import error_responses
from api.lists import CursorPages, read_filters
from api.subscriptions.serializers import (
    BreakerHistorySerializer,
    RotateSecretSerializer,
    SubscriptionDeletedSerializer,
    SubscriptionSerializer,
)
from delivery.actions import delete_subscription, resume_subscription
from delivery.models import waiting_count
from subscriptions.models import Subscription


def reply(subscription: Subscription, *, reveal_secret: bool = False, code: int = status.HTTP_200_OK) -> Response:
    body = SubscriptionSerializer(subscription, context={"reveal_secret": reveal_secret})
    return Response(body.data, status=code)


class SubscriptionFilters(serializers.Serializer):
    name = serializers.CharField(required=False)
    type = serializers.ChoiceField(choices=Subscription.Type.choices, required=False)
    status = serializers.ChoiceField(choices=Subscription.Status.choices, required=False)


@extend_schema_view(
    get=extend_schema(summary="List a room's subscriptions", parameters=[SubscriptionFilters],
                      responses={200: SubscriptionSerializer, **error_responses(400, 403, 404)}),
    post=extend_schema(
        summary="Subscribe to a room",
        description="The reply is the only one that shows a push subscription's `signing_secret` in full "
                    "(see rotate-secret). Limits: `max_in_flight` 1–1000, `max_per_second` 1–10000 or null, "
                    "`timeout_ms` 100–300000, "
                    "`delivery_attempts` 0–100, `delivery_delay_multiplier` 1–100, `max_delivery_delay_ms` "
                    "at least `delivery_delay_ms` when both are set here.",
        responses={201: SubscriptionSerializer, **error_responses(400, 403, 404, 409, 413)},
    ),
)
class SubscriptionListView(generics.ListCreateAPIView):
    serializer_class = SubscriptionSerializer
    pagination_class = CursorPages
    filter_backends = [filters.OrderingFilter]
    ordering_fields = ["name", "created_at", "id"]
    ordering = ["name"]

    def get_queryset(self) -> QuerySet[Subscription]:
        given = read_filters(SubscriptionFilters, self.request)
        subscriptions = usable_room(self.request, self.kwargs["room_id"]).subscriptions.filter(**given)
        return subscriptions.annotate(waiting=waiting_count())

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        room = usable_room(request, self.kwargs["room_id"])
        body = SubscriptionSerializer(data=request.data, context={"room": room, "reveal_secret": True})
        body.is_valid(raise_exception=True)
        body.save()
        return Response(body.data, status=status.HTTP_201_CREATED)


@extend_schema_view(
    get=extend_schema(summary="Read a subscription",
                      responses={200: SubscriptionSerializer, **error_responses(403, 404)}),
    patch=extend_schema(
        summary="Change a subscription",
        description="`type` cannot change. New delivery settings apply to retries scheduled after the change.",
        responses={200: SubscriptionSerializer, **error_responses(400, 403, 404, 409, 413)},
    ),
    delete=extend_schema(
        summary="Delete a subscription",
        description="Every delivery still on its way (pending, queued, retrying, leased) is dead-lettered "
                    "with the reason 'subscription {id} was deleted' and stays in the message log; the "
                    "subscription's queues on the broker are emptied. Nothing more is delivered to it. "
                    "The reply says how many deliveries were dead-lettered.",
        request=None,
        responses={200: SubscriptionDeletedSerializer, **error_responses(403, 404)},
    ),
)
class SubscriptionDetailView(generics.RetrieveUpdateDestroyAPIView):
    serializer_class = SubscriptionSerializer
    http_method_names = ["get", "patch", "delete", "head", "options"]

    def get_object(self) -> Subscription:
        return usable_subscription(self.request, self.kwargs["subscription_id"])

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = SubscriptionSerializer(self.get_object(), data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        body.save()
        return Response(body.data)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        subscription = self.get_object()
        subscription_id = subscription.pk
        dead_lettered = delete_subscription(subscription)
        detail = (f"subscription {subscription_id} is deleted; {dead_lettered} unsettled deliveries were "
                  f"dead-lettered and nothing more will be delivered to it")
        body = {"id": subscription_id, "dead_lettered": dead_lettered, "detail": detail}
        return Response(SubscriptionDeletedSerializer(body).data)


class PauseView(APIView):
    @extend_schema(
        operation_id="subscriptions_pause",
        summary="Pause a subscription",
        description="Pause holds: events published while it is paused are stored for it and wait, with those "
                    "already queued, until it is resumed (the room's expiration still applies); `waiting` counts "
                    "them. A pull from a paused subscription is refused (409). Pausing a paused subscription "
                    "changes nothing.",
        request=None, responses={200: SubscriptionSerializer, **error_responses(403, 404)},
    )
    def post(self, request: Request, subscription_id: int) -> Response:
        subscription = usable_subscription(request, subscription_id)
        subscription.pause(by=f"through the API with key “{request.auth.name}”")
        return reply(subscription)


class ResumeView(APIView):
    @extend_schema(
        operation_id="subscriptions_resume",
        summary="Resume a paused or disabled subscription",
        description="Makes it active, clears `status_reason`, and for push starts delivering what waits, in "
                    "publish order (one event per ordering key at a time). Resuming an active subscription "
                    "changes nothing.",
        request=None, responses={200: SubscriptionSerializer, **error_responses(403, 404)},
    )
    def post(self, request: Request, subscription_id: int) -> Response:
        subscription = usable_subscription(request, subscription_id)
        resume_subscription(subscription)
        return reply(subscription)


class RotateSecretView(APIView):
    @extend_schema(
        operation_id="subscriptions_rotate_secret",
        summary="Replace a push subscription's signing secret, with an overlap",
        description="The reply shows the new secret in full. Deliveries are signed with it from the next "
                    "attempt on, on every worker. The old secret keeps signing each push too, a second "
                    "signature in `webhook-signature`, for `overlap_seconds` (default 24 hours): receivers "
                    "verifying with either secret accept it. `previous_secret_until` in the reply says when the "
                    "old secret stops being used; end-secret-overlap ends it early. Rotating during an overlap "
                    "drops the oldest secret.",
        request=RotateSecretSerializer, responses={200: SubscriptionSerializer, **error_responses(400, 403, 404)},
    )
    def post(self, request: Request, subscription_id: int) -> Response:
        subscription = push_subscription(request, subscription_id)
        body = RotateSecretSerializer(data=request.data or {})
        body.is_valid(raise_exception=True)
        overlap = body.validated_data.get("overlap_seconds")
        subscription.rotate_signing_secret(None if overlap is None else timedelta(seconds=overlap))
        return reply(subscription, reveal_secret=True)


class EndSecretOverlapView(APIView):
    @extend_schema(
        operation_id="subscriptions_end_secret_overlap",
        summary="Stop signing with the previous secret now",
        description="Ends a rotation's overlap early: from the next attempt on (within about a second) pushes "
                    "carry the current secret's signature only. Without an overlap, changes nothing.",
        request=None, responses={200: SubscriptionSerializer, **error_responses(400, 403, 404)},
    )
    def post(self, request: Request, subscription_id: int) -> Response:
        subscription = push_subscription(request, subscription_id)
        subscription.end_secret_overlap()
        return reply(subscription)


def push_subscription(request: Request, subscription_id: int) -> Subscription:
    """The subscription, usable by this key and a push one (a 400 for pull: it has no signing secret)."""
    subscription = usable_subscription(request, subscription_id)
    if subscription.type != Subscription.Type.PUSH:
        raise exceptions.ValidationError({"type": ["only push subscriptions have a signing secret"]})
    return subscription


class BreakerView(APIView):
    @extend_schema(
        operation_id="subscriptions_breaker",
        summary="Read a push subscription's circuit breaker and its history",
        description="The state (`closed`, `open`, `half_open`), why, the next probe time when open, and the latest "
                    "transitions, each with its time, reason and the attempt that caused it "
                    "(docs/delivery-semantics.md#circuit-breaker).",
        responses={200: BreakerHistorySerializer, **error_responses(400, 403, 404)},
    )
    def get(self, request: Request, subscription_id: int) -> Response:
        subscription = usable_subscription(request, subscription_id)
        if subscription.type != Subscription.Type.PUSH:
            raise exceptions.ValidationError({"type": ["only push subscriptions have a circuit breaker"]})
        return Response(BreakerHistorySerializer(subscription).data)
