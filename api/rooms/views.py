"""REST endpoints for rooms and their event types (docs/contract.md#rest-api).

Admin keys may do everything. A room key may read the rooms named on it and manage their event
types; creating, changing and deleting rooms takes an admin key. Lists show only the key's rooms.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import filters, generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from api.auth import api_key, check_admin, usable_room
from api.errors import error_responses
from api.lists import CursorPages, read_filters
from api.rooms.serializers import EventTypeSerializer, RoomDeletedSerializer, RoomSerializer
from delivery.actions import delete_room
from rooms.models import EventType, Room


class RoomFilters(serializers.Serializer):
    name = serializers.CharField(required=False, help_text="Only the room with this exact name.")
    search = serializers.CharField(required=False, help_text="Only rooms whose name contains this, any case.")


@extend_schema_view(
    get=extend_schema(summary="List the rooms this key may use", parameters=[RoomFilters],
                      responses={200: RoomSerializer, **error_responses(400, 404)}),
    post=extend_schema(summary="Create a room (admin keys only)",
                       responses={201: RoomSerializer, **error_responses(400, 403, 409, 413)}),
)
class RoomListView(generics.ListCreateAPIView):
    serializer_class = RoomSerializer
    pagination_class = CursorPages
    filter_backends = [filters.OrderingFilter]
    ordering_fields = ["name", "created_at", "id"]
    ordering = ["name"]

    def get_queryset(self) -> QuerySet[Room]:
        given = read_filters(RoomFilters, self.request)
        rooms = api_key(self.request).usable_rooms()
        if "name" in given:
            rooms = rooms.filter(name=given["name"])
        if "search" in given:
            rooms = rooms.filter(name__icontains=given["search"])
        return rooms

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        check_admin(request, "create rooms")
        return super().create(request, *args, **kwargs)


@extend_schema_view(
    get=extend_schema(summary="Read a room", responses={200: RoomSerializer, **error_responses(403, 404)}),
    patch=extend_schema(
        summary="Change a room (admin keys only)",
        description="New delivery settings apply to every retry scheduled after the change.",
        responses={200: RoomSerializer, **error_responses(400, 403, 404, 409, 413)},
    ),
    delete=extend_schema(
        summary="Delete a room (admin keys only)",
        description="Deletes the room with its event types, subscriptions, messages and their log, and "
                    "empties its queues on the broker. Nothing more is delivered from it.",
        request=None,
        responses={200: RoomDeletedSerializer, **error_responses(403, 404)},
    ),
)
class RoomDetailView(generics.RetrieveUpdateDestroyAPIView):
    serializer_class = RoomSerializer
    http_method_names = ["get", "patch", "delete", "head", "options"]

    def get_object(self) -> Room:
        return usable_room(self.request, self.kwargs["room_id"])

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        room = self.get_object()
        check_admin(request, "change rooms")
        body = RoomSerializer(room, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        body.save()
        return Response(body.data)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        room = self.get_object()
        check_admin(request, "delete rooms")
        deleted = delete_room(room)
        return Response(RoomDeletedSerializer(deleted).data)


class EventTypeFilters(serializers.Serializer):
    name = serializers.CharField(required=False)
    version = serializers.CharField(required=False)


@extend_schema_view(
    get=extend_schema(summary="List a room's event types", parameters=[EventTypeFilters],
                      responses={200: EventTypeSerializer, **error_responses(400, 403, 404)}),
    post=extend_schema(
        summary="Add an event type to a room",
        description="`schema`, when given, must be a valid JSON Schema (draft 2020-12); published payloads "
                    "of this type and version must then satisfy it. Event types cannot be changed: add a "
                    "new version instead.",
        responses={201: EventTypeSerializer, **error_responses(400, 403, 404, 409, 413)},
    ),
)
class EventTypeListView(generics.ListCreateAPIView):
    serializer_class = EventTypeSerializer
    pagination_class = CursorPages
    filter_backends = [filters.OrderingFilter]
    ordering_fields = ["name", "version", "created_at", "id"]
    ordering = ["name", "version"]

    def get_queryset(self) -> QuerySet[EventType]:
        given = read_filters(EventTypeFilters, self.request)
        return usable_room(self.request, self.kwargs["room_id"]).event_types.filter(**given)

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        room = usable_room(request, self.kwargs["room_id"])
        body = EventTypeSerializer(data=request.data, context={"room": room})
        body.is_valid(raise_exception=True)
        body.save()
        return Response(body.data, status=status.HTTP_201_CREATED)


@extend_schema_view(
    get=extend_schema(summary="Read an event type", responses={200: EventTypeSerializer,
                                                                **error_responses(403, 404)}),
    delete=extend_schema(
        summary="Delete an event type",
        description="Publishing it is refused from then on; subscription filters naming it stay and match "
                    "nothing until it is added again.",
        responses={204: OpenApiResponse(description="Deleted."), **error_responses(403, 404)},
    ),
)
class EventTypeDetailView(generics.RetrieveDestroyAPIView):
    serializer_class = EventTypeSerializer

    def get_object(self) -> EventType:
        room = usable_room(self.request, self.kwargs["room_id"])
        return get_object_or_404(room.event_types, pk=self.kwargs["event_type_id"])
