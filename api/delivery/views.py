"""REST endpoints of the publish path, the message log, pull consumers and dead letters (docs/contract.md#rest-api)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.http import http_date
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind
from rest_framework import exceptions, generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from analytics.models import ArchivedMessage
from api.auth import (
    api_key,
    cached_room,
    check_room_access,
    fresh_room,
    usable_subscription,
)
from api.delivery.serializers import (
    AckSerializer,
    ArchivedMessageSerializer,
    BatchPublishSerializer,
    BatchReplySerializer,
    DeadLetterActionReplySerializer,
    DeadLetterFilters,
    DeadLetterSelection,
    DeadLetterSerializer,
    DeliveryRowSerializer,
    ExtendSerializer,
    MessageDetailSerializer,
    NackSerializer,
    ParkedKeySerializer,
    PublishReplySerializer,
    PublishSerializer,
    PulledMessageSerializer,
    PullReplySerializer,
    PullSerializer,
    ReleasedKeySerializer,
    ReleaseKeySerializer,
    SettledSerializer,
    WhoAmISerializer,
)
from api.errors import Conflict, error_responses
from api.lists import NewestFirst, read_fields, read_filters
from api.long_polls import long_poll_slot
from delivery import dead_letters, pull, sequencing
from delivery.models import Delivery, DeliveryAttempt, Message
from delivery.publish import (
    Checked,
    Event,
    Published,
    PublishRejected,
    RepublishRefused,
    StaleCache,
    events_errors,
    publish,
    publish_many,
    republish,
)
from dovecote import tracing
from dovecote.inputs import IdField
from rooms.models import Room
from subscriptions.models import Subscription

CORRELATION_HEADER = OpenApiParameter(
    "X-Correlation-ID", str, OpenApiParameter.HEADER, required=False,
    description="The correlation id of a message whose body names none (absent from both: a new UUID).",
)
TRACEPARENT_HEADER = OpenApiParameter(
    "traceparent", str, OpenApiParameter.HEADER, required=False,
    description="W3C Trace Context of the publisher: the message's trace continues it, and each push carries "
                "a traceparent of that trace to the receiver. A malformed value is ignored.",
)


class PublishView(APIView):
    keys_from_cache = True  # api.auth.ApiKeyAuthentication: the key from the process's cache, verified at commit

    @extend_schema(operation_id="messages_publish", tags=["messages"], summary="Publish an event to a room",
                   parameters=[CORRELATION_HEADER, TRACEPARENT_HEADER], request=PublishSerializer,
                   responses={202: PublishReplySerializer, **error_responses(400, 403, 404, 413, 503)})
    def post(self, request: Request, room_id: int) -> Response:
        with publish_span(request, room_id) as span:
            room, checked = cached_room(request, room_id)
            event = event_of(read_fields(PublishSerializer, request.data), request, message_traceparent(request))
            published = publish_checked(request, room, checked, lambda room, checked: [publish(room, event,
                                                                                                checked=checked)])[0]
            span.set_attributes({"dovecote.correlation_id": published.correlation_id,
                                 "dovecote.message_id": published.message_id})
        return Response(published.as_reply(), status=status.HTTP_202_ACCEPTED)


class BatchPublishView(APIView):
    keys_from_cache = True

    @extend_schema(operation_id="messages_publish_batch", tags=["messages"],
                   summary="Publish up to 500 events to a room at once",
                   description="One invalid item rejects the batch with 400 naming its index. The "
                               "`X-Correlation-ID` header applies to every item whose body names no id.",
                   parameters=[CORRELATION_HEADER, TRACEPARENT_HEADER], request=BatchPublishSerializer,
                   responses={202: BatchReplySerializer, **error_responses(400, 403, 404, 413, 503)})
    def post(self, request: Request, room_id: int) -> Response:
        room, checked = cached_room(request, room_id)
        items = BatchPublishSerializer(data=request.data)
        if not items.is_valid():
            if not only_item_errors(items.errors):
                raise exceptions.ValidationError(items.errors)  # no list, too long, empty: nothing to look into
            # Some items do not parse: name them, and what is wrong with the others, in one reply.
            events, errors = batch_events(request)
            errors |= events_errors(room, events)
            raise exceptions.ValidationError({"messages": dict(sorted(errors.items(), key=lambda e: int(e[0])))})
        # publish_many checks each event once (its type and version, its schema) and names the bad ones
        with publish_span(request, room_id) as span:
            traceparent = message_traceparent(request)
            batch = [event_of(fields, request, traceparent) for fields in items.validated_data["messages"]]
            published = publish_checked(request, room, checked,
                                        lambda room, checked: publish_many(room, batch, checked=checked))
            span.set_attribute("dovecote.messages", len(published))
        return Response({"messages": [p.as_reply() for p in published]}, status=status.HTTP_202_ACCEPTED)


def publish_checked(request: Request, room: Room, checked: Checked,
                    publish_to: Callable[[Room, Checked | None], list[Published]]) -> list[Published]:
    """Publish with the room and key read from the process's cache; read both again if either changed meanwhile.

    PublishRejected (the events' own faults) is a 400 naming each bad field.
    """
    try:
        try:
            return publish_to(room, checked)
        except StaleCache:
            return publish_to(fresh_room(request, room.pk), None)
    except PublishRejected as rejected:
        raise exceptions.ValidationError(rejected.errors) from None


def only_item_errors(errors: dict) -> bool:
    """Say whether a batch failed only on some items (DRF keys those errors by index)."""
    items = errors.get("messages")
    return set(errors) == {"messages"} and isinstance(items, dict) and all(isinstance(k, int) for k in items)


def batch_events(request: Request) -> tuple[dict[int, Event], dict[str, Any]]:
    """Parse every item of a batch: the events that parse, and the field errors of the rest, by index."""
    events, errors = {}, {}
    for index, item in enumerate(request.data["messages"]):
        fields = PublishSerializer(data=item)
        if fields.is_valid():
            events[index] = event_of(fields.validated_data, request, "")  # only checked, never stored
        else:
            errors[str(index)] = fields.errors
    return events, errors


def event_of(fields: dict[str, Any], request: Request, traceparent: str) -> Event:
    """Build an Event from a message's validated fields; the X-Correlation-ID header stands in for a missing id."""
    correlation_id = fields.get("correlation_id") or request.headers.get("X-Correlation-ID", "")
    return Event(
        event_type=fields["event_type"], event_version=fields["event_version"], payload=fields["payload"],
        correlation_id=correlation_id[:200], idempotency_key=fields.get("idempotency_key"), traceparent=traceparent,
        ordering_key=fields.get("ordering_key", ""),
    )


def message_traceparent(request: Request) -> str:
    """The trace context a message keeps: the publish span's while tracing is on, else the publisher's own."""
    return tracing.current_traceparent() or tracing.valid_traceparent(request.headers.get("traceparent"))


@contextmanager
def publish_span(request: Request, room_id: int) -> Iterator[Span]:
    """The server span of a publish request, continuing the publisher's W3C traceparent (no-op while tracing is off)."""
    if not tracing.enabled():
        yield INVALID_SPAN
        return
    parent = tracing.context_of(tracing.valid_traceparent(request.headers.get("traceparent")))
    with tracing.tracer().start_as_current_span(
            "publish", context=parent, kind=SpanKind.SERVER,
            attributes={"http.request.method": "POST", "url.path": request.path, "dovecote.room_id": room_id}) as span:
        yield span


class MessageLogFilters(serializers.Serializer):
    room = IdField(required=False)
    subscription = IdField(required=False)
    correlation_id = serializers.CharField(required=False)
    status = serializers.ChoiceField(choices=Delivery.Status.values, required=False)
    event_type = serializers.CharField(required=False)
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)


@extend_schema_view(get=extend_schema(parameters=[MessageLogFilters],
                                     responses={200: DeliveryRowSerializer(many=True), **error_responses(400, 404)}))
class MessageLogView(generics.ListAPIView):
    """One row per destination, newest first."""

    serializer_class = DeliveryRowSerializer
    pagination_class = NewestFirst

    def get_queryset(self) -> QuerySet[Delivery]:
        given = read_filters(MessageLogFilters, self.request)
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
    @extend_schema(responses={200: MessageDetailSerializer, 410: OpenApiResponse(
                       ArchivedMessageSerializer, description="Retention moved the message to the archive: "
                                                              "when, and where its rows are."),
                   **error_responses(403, 404)})
    def get(self, request: Request, message_id: uuid.UUID) -> Response:
        timeline = Prefetch("deliveries__attempt_log", queryset=DeliveryAttempt.objects.order_by("started_at", "id"))
        message = (Message.objects.select_related("room").prefetch_related(
            Prefetch("deliveries", queryset=Delivery.objects.order_by("pk")), timeline
        ).filter(pk=message_id).first())
        if message is None:
            return archived_message(request, message_id)
        check_room_access(request, message.room)
        return Response(MessageDetailSerializer(message).data)


def archived_message(request: Request, message_id: uuid.UUID) -> Response:
    """Answer 410 with where an archived message went (404 if it never was here), to a key with rights on its room."""
    archived = get_object_or_404(ArchivedMessage.objects.select_related("batch"), pk=message_id)
    if not api_key(request).can_use_room(archived.room_id):
        raise exceptions.PermissionDenied(f"this API key has no rights on room {archived.room_id}")
    return Response(ArchivedMessageSerializer(archived).data, status=status.HTTP_410_GONE)


class RepublishView(APIView):
    @extend_schema(operation_id="messages_republish", tags=["messages"], request=None,
                   summary="Re-publish an unroutable message",
                   description="Sends a message that matched no subscription when it was published "
                               "(status `unroutable`) to the subscriptions it matches now. 409 when "
                               "it is not unroutable or still matches none.",
                   responses={202: PublishReplySerializer, **error_responses(403, 404, 409)})
    def post(self, request: Request, message_id: uuid.UUID) -> Response:
        message = get_object_or_404(Message.objects.select_related("room"), pk=message_id)
        check_room_access(request, message.room)
        try:
            published = republish(message)
        except RepublishRefused as refused:
            raise Conflict(str(refused)) from None
        return Response(published.as_reply(), status=status.HTTP_202_ACCEPTED)


class PullView(APIView):
    @extend_schema(operation_id="subscriptions_pull", summary="Lease messages of a pull subscription",
                   request=PullSerializer,
                   responses={200: PullReplySerializer, **error_responses(400, 403, 404, 409, 413, 503)})
    def post(self, request: Request, subscription_id: int) -> Response:
        subscription = usable_subscription(request, subscription_id, Subscription.Type.PULL)
        if not subscription.is_active:
            raise Conflict(f"subscription {subscription.pk} is {subscription.status}: resume it to pull")
        options = read_fields(PullSerializer, request.data)
        if options["wait_ms"] > 0:  # a long poll holds this thread: within the long-poll limits only
            with long_poll_slot(api_key(request).pk, options["wait_ms"]):
                leases = pull.pull(subscription, **options)
        else:
            leases = pull.pull(subscription, **options)
        return Response({"messages": PulledMessageSerializer(leases, many=True).data})


class AckView(APIView):
    @extend_schema(operation_id="subscriptions_ack", summary="Acknowledge leased messages",
                   request=AckSerializer, responses={200: SettledSerializer, **error_responses(400, 403, 404, 413)})
    def post(self, request: Request, subscription_id: int) -> Response:
        subscription = usable_subscription(request, subscription_id, Subscription.Type.PULL)
        settled = pull.ack(subscription, read_fields(AckSerializer, request.data)["ack_ids"])
        return Response(SettledSerializer(settled).data)


class NackView(APIView):
    @extend_schema(operation_id="subscriptions_nack", summary="Give leased messages back (retry or dead letter)",
                   request=NackSerializer, responses={200: SettledSerializer, **error_responses(400, 403, 404, 413)})
    def post(self, request: Request, subscription_id: int) -> Response:
        subscription = usable_subscription(request, subscription_id, Subscription.Type.PULL)
        fields = read_fields(NackSerializer, request.data)
        settled = pull.nack(subscription, fields["ack_ids"], action=fields["action"], delay_ms=fields.get("delay_ms"))
        return Response(SettledSerializer(settled).data)


class ExtendView(APIView):
    @extend_schema(operation_id="subscriptions_extend", summary="Extend the leases of messages",
                   request=ExtendSerializer, responses={200: SettledSerializer, **error_responses(400, 403, 404, 413)})
    def post(self, request: Request, subscription_id: int) -> Response:
        subscription = usable_subscription(request, subscription_id, Subscription.Type.PULL)
        fields = read_fields(ExtendSerializer, request.data)
        settled = pull.extend(subscription, fields["ack_ids"], lease_ms=fields["lease_ms"])
        return Response(SettledSerializer(settled).data)


# DELETE …/dead-letters/ with a body was the first form of purge; POST …/dead-letters/purge/ replaced it.
PURGE_BY_DELETE_DEPRECATED = datetime(2026, 11, 23, tzinfo=UTC)
PURGE_BY_DELETE_SUNSET = datetime(2027, 6, 1, tzinfo=UTC)


@extend_schema_view(get=extend_schema(
    parameters=[DeadLetterFilters], responses={200: DeadLetterSerializer(many=True), **error_responses(400, 403, 404)},
))
class DeadLetterListView(generics.ListAPIView):
    serializer_class = DeadLetterSerializer
    pagination_class = NewestFirst

    def get_queryset(self) -> QuerySet[Delivery]:
        subscription = usable_subscription(self.request, self.kwargs["subscription_id"])
        filters = read_filters(DeadLetterFilters, self.request)
        return dead_letters.dead_letters(subscription, **filters).select_related("message")

    @extend_schema(
        operation_id="subscriptions_dead_letters_purge_deprecated", deprecated=True,
        summary="Purge dead letters (deprecated: use POST …/dead-letters/purge/)",
        description=f"Takes the same JSON body as `POST /subscriptions/{{id}}/dead-letters/purge/`, which "
                    f"replaces it: OpenAPI 3.0 cannot describe a DELETE body, so generated clients cannot "
                    f"call this one. It keeps working until {PURGE_BY_DELETE_SUNSET:%Y-%m-%d}; its replies "
                    f"carry `Deprecation`, `Sunset` and a `Link` to the successor.",
        request=None, responses={200: DeadLetterActionReplySerializer, **error_responses(400, 403, 404, 413)},
        parameters=[
            OpenApiParameter("Deprecation", str, OpenApiParameter.HEADER, response=[200],
                             description="When this form was deprecated (RFC 9745), `@` and unix seconds."),
            OpenApiParameter("Sunset", str, OpenApiParameter.HEADER, response=[200],
                             description="The HTTP date after which it may stop working (RFC 8594)."),
            OpenApiParameter("Link", str, OpenApiParameter.HEADER, response=[200],
                             description='The successor: `<…/dead-letters/purge/>; rel="successor-version"`.'),
        ],
    )
    def delete(self, request: Request, subscription_id: int) -> Response:
        return purge_dead_letters(request, subscription_id)

    def finalize_response(self, request: Request, response: Response, *args: object, **kwargs: object) -> Response:
        """Mark every reply of the deprecated DELETE, errors included, as deprecated."""
        response = super().finalize_response(request, response, *args, **kwargs)
        if request.method == "DELETE":
            successor = reverse("dead-letters-purge", kwargs={"subscription_id": self.kwargs["subscription_id"]})
            response["Deprecation"] = f"@{int(PURGE_BY_DELETE_DEPRECATED.timestamp())}"  # RFC 9745
            response["Sunset"] = http_date(PURGE_BY_DELETE_SUNSET.timestamp())  # RFC 8594
            response["Link"] = f'<{successor}>; rel="successor-version"'
        return response


def purge_dead_letters(request: Request, subscription_id: int) -> Response:
    """Purge the dead letters the body selects (`message_ids` or `all`); reply with how many."""
    subscription = usable_subscription(request, subscription_id)
    selection = read_fields(DeadLetterSelection, request.data)
    return Response({"count": dead_letters.purge(subscription, selection.get("message_ids"))})


class DeadLetterPurgeView(APIView):
    @extend_schema(
        operation_id="subscriptions_dead_letters_purge", summary="Purge dead letters",
        description="The chosen dead letters (`message_ids`, or `all`) leave the dead-letter list for good; "
                    "their message log rows and attempts stay, for the reports.",
        request=DeadLetterSelection,
        responses={200: DeadLetterActionReplySerializer, **error_responses(400, 403, 404, 413)},
    )
    def post(self, request: Request, subscription_id: int) -> Response:
        return purge_dead_letters(request, subscription_id)


class DeadLetterReplayView(APIView):
    @extend_schema(operation_id="subscriptions_dead_letters_replay", summary="Replay dead letters",
                   request=DeadLetterSelection,
                   responses={202: DeadLetterActionReplySerializer, **error_responses(400, 403, 404, 413)})
    def post(self, request: Request, subscription_id: int) -> Response:
        """Send dead letters again with the attempt count reset (same message id and correlation id)."""
        subscription = usable_subscription(request, subscription_id)
        selection = read_fields(DeadLetterSelection, request.data)
        return Response({"count": len(dead_letters.replay(subscription, selection.get("message_ids")))},
                        status=status.HTTP_202_ACCEPTED)


class ParkedKeysView(APIView):
    @extend_schema(operation_id="subscriptions_parked_keys", summary="List the parked ordering keys",
                   description="Keys of a subscription with `ordering: park` whose event was dead-lettered: the "
                               "events behind it wait until it is replayed or the key released.",
                   responses={200: ParkedKeySerializer(many=True), **error_responses(403, 404)})
    def get(self, request: Request, subscription_id: int) -> Response:
        subscription = usable_subscription(request, subscription_id)
        return Response(ParkedKeySerializer(sequencing.parked_keys(subscription), many=True).data)


class ReleaseKeyView(APIView):
    @extend_schema(operation_id="subscriptions_parked_keys_release", summary="Release a parked ordering key",
                   description="The key moves on without its dead letter (which stays, replayable): its next "
                               "event is sent. 409 when the key is not parked.",
                   request=ReleaseKeySerializer,
                   responses={200: ReleasedKeySerializer, **error_responses(400, 403, 404, 409, 413)})
    def post(self, request: Request, subscription_id: int) -> Response:
        subscription = usable_subscription(request, subscription_id)
        key = read_fields(ReleaseKeySerializer, request.data)["ordering_key"]
        try:
            released = sequencing.release_parked_key(subscription, key)
        except sequencing.KeyNotParked as refused:
            raise Conflict(str(refused)) from None
        message_id = Delivery.objects.filter(pk=released).values_list("message_id", flat=True).first()
        return Response({"ordering_key": key, "released_message_id": message_id})


class WhoAmIView(APIView):
    """Say which key made the request and what it may use: a cheap check that a key works."""

    @extend_schema(operation_id="whoami", responses={200: WhoAmISerializer, **error_responses()})
    def get(self, request: Request) -> Response:
        key = api_key(request)
        rooms = None if key.is_admin else sorted(key.rooms.values_list("pk", flat=True))
        return Response({"name": key.name, "admin": key.is_admin, "rooms": rooms})
