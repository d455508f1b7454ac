"""Rooms: the list, create and edit (delivery settings with a schedule preview), detail, event types, delete."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.forms.rooms import EventTypeForm, RoomForm
from console.schedule import expiration, schedule_context, settings_values, summary
from console.shortcuts import posted, render_page, require_any_permission, require_permission, staff_required
from console.subscriptions import subscription_counts
from console.text import counted
from delivery.actions import delete_room
from rooms.models import Room
from subscriptions.retry import RetryPolicy

PAGE_SIZE = 50


@staff_required
@require_GET
def room_list(request: HttpRequest) -> TemplateResponse:
    """List the rooms with how many event types and subscriptions each has."""
    rooms = Room.objects.annotate(
        event_type_count=Count("event_types", distinct=True),
        subscription_count=Count("subscriptions", distinct=True),
    ).order_by("name")
    page = Paginator(rooms, PAGE_SIZE).get_page(request.GET.get("page"))
    rows = [(room, summary(RetryPolicy.of_room(room)), expiration(room.message_expiration_ms)) for room in page]
    return render_page(request, "console/room_list.html", {"section": "rooms", "page": page, "rows": rows})


@staff_required
@require_http_methods(["GET", "POST"])
def room_create(request: HttpRequest) -> HttpResponse:
    """Create a room."""
    require_permission(request, "rooms.add_room")
    form = RoomForm(posted(request))
    if request.method == "POST" and form.is_valid():
        room = form.save()
        messages.success(request, f"Room {room.name} created. Add the event types it accepts.")
        return redirect("console:room-detail", room_id=room.pk)
    return room_form_page(request, form, None)


@staff_required
@require_http_methods(["GET", "POST"])
def room_edit(request: HttpRequest, room_id: int) -> HttpResponse:
    """Change a room's name, description and delivery settings."""
    require_permission(request, "rooms.change_room")
    room = get_object_or_404(Room, pk=room_id)
    form = RoomForm(posted(request), instance=room)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, f"Room {room.name} saved. New settings apply to retries scheduled from now on.")
        return redirect("console:room-detail", room_id=room.pk)
    return room_form_page(request, form, room)


def room_form_page(request: HttpRequest, form: RoomForm, room: Room | None) -> TemplateResponse:
    values = form.data if form.is_bound else settings_values(form.instance, expiration=True)
    return render_page(request, "console/room_form.html", {
        "section": "rooms", "form": form, "room": room, **schedule_context(values),
    })


@staff_required
@require_POST
def room_schedule_preview(request: HttpRequest) -> TemplateResponse:
    """Render the retry-schedule preview of the room form's current values (an htmx fragment)."""
    require_any_permission(request, "rooms.add_room", "rooms.change_room")
    return TemplateResponse(request, "console/room_form.html#schedule", schedule_context(request.POST))


@staff_required
@require_GET
def room_detail(request: HttpRequest, room_id: int) -> TemplateResponse:
    """Show a room: its settings, event types (with a form to add one) and subscriptions."""
    room = get_object_or_404(Room, pk=room_id)
    return room_detail_page(request, room, EventTypeForm(room=room))


def room_detail_page(request: HttpRequest, room: Room, form: EventTypeForm) -> TemplateResponse:
    subscriptions = list(room.subscriptions.order_by("name"))
    counts = subscription_counts([s.pk for s in subscriptions])
    return render_page(request, "console/room_detail.html", {
        "section": "rooms", "room": room, "event_types": room.event_types.order_by("name", "version"),
        "subscriptions": [(s, counts.get(s.pk, {})) for s in subscriptions], "event_type_form": form,
        **schedule_context(settings_values(room, expiration=True)),
    })


@staff_required
@require_POST
def event_type_add(request: HttpRequest, room_id: int) -> HttpResponse:
    """Add an event type to a room; on a mistake show the room again with the form's errors."""
    require_permission(request, "rooms.add_eventtype")
    room = get_object_or_404(Room, pk=room_id)
    form = EventTypeForm(request.POST, room=room)
    if not form.is_valid():
        return room_detail_page(request, room, form)
    event_type = form.save()
    messages.success(request, f"Event type {event_type.name} v{event_type.version} added.")
    return redirect("console:room-detail", room_id=room.pk)


@staff_required
@require_http_methods(["GET", "POST"])
def room_delete(request: HttpRequest, room_id: int) -> HttpResponse:
    """Ask to confirm, then delete a room with everything in it."""
    require_permission(request, "rooms.delete_room")
    room = get_object_or_404(Room, pk=room_id)
    if request.method == "POST":
        deleted = delete_room(room)
        messages.success(request, f"Room {room.name} deleted: {counted(deleted.subscriptions_deleted, 'subscription')} "
                                  f"and {counted(deleted.messages_deleted, 'message')} with it.")
        return redirect("console:room-list")
    counts = {"subscriptions": room.subscriptions.count(), "messages": room.messages.count()}
    return render_page(request, "console/confirm_delete.html", {
        "section": "rooms", "what": f"room {room.name}",
        "cancel_url": reverse("console:room-detail", kwargs={"room_id": room.pk}),
        "consequences": [f"its {counted(counts['subscriptions'], 'subscription')} and event types",
                         f"its {counted(counts['messages'], 'message')} and their delivery log",
                         "the frames still queued for it on the broker"],
    })

