"""The message log (one row per destination) and a message's page with its live attempt timeline."""

from __future__ import annotations

import uuid

from django.contrib import messages as notices
from django.db.models import Prefetch, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET, require_POST

from analytics.models import ArchivedMessage
from console.forms.messages import MessageFilterForm, pretty_json
from console.shortcuts import keyset_page, query_without, render_page, require_permission, staff_required
from delivery.models import Delivery, DeliveryAttempt, Message
from delivery.publish import RepublishRefused, republish
from rooms.models import Room

PAGE_SIZE = 50
POLL_SECONDS = 1


@staff_required
@require_GET
def message_list(request: HttpRequest) -> TemplateResponse:
    """List deliveries newest first, filtered and searched by correlation or message id, a page at a time."""
    form = MessageFilterForm(request.GET)
    rows = Delivery.objects.select_related("message__room", "subscription").filter(**form.lookups())
    if search := form.search():
        text, message_id = search
        rows = rows.filter(Q(message__correlation_id=text) | Q(message_id=message_id) if message_id
                           else Q(message__correlation_id=text))
    page = keyset_page(rows, request, PAGE_SIZE)
    return render_page(request, "console/message_list.html", {
        "section": "messages", "form": form, "page": page, "filters": query_without(request, "before", "after"),
    })


@staff_required
@require_GET
def message_detail(request: HttpRequest, message_id: uuid.UUID) -> TemplateResponse:
    """Show a message's payload and each destination's attempts; htmx polls them while Dovecote moves one on."""
    message = Message.objects.select_related("room").filter(pk=message_id).first()
    if message is None:
        return archived_message(request, message_id)
    timeline = Prefetch("attempt_log", queryset=DeliveryAttempt.objects.order_by("started_at", "pk"))
    destinations = list(message.deliveries.select_related("subscription").prefetch_related(timeline).order_by("pk"))
    return render_page(request, "console/message_detail.html", {
        "section": "messages", "message": message, "payload": pretty_json(message.payload),
        "destinations": destinations, "settled": all(d.is_final for d in destinations),
        "unroutable": any(d.status == Delivery.Status.UNROUTABLE for d in destinations),
        "live": any(is_moving(d) for d in destinations), "poll_seconds": POLL_SECONDS,
    }, fragments=["destinations"])


def archived_message(request: HttpRequest, message_id: uuid.UUID) -> TemplateResponse:
    """Say when retention moved the message to the archive and where its rows are (410); 404 if it never was here."""
    archived = get_object_or_404(ArchivedMessage.objects.select_related("batch"), pk=message_id)
    room = Room.objects.filter(pk=archived.room_id).first()
    locations = [(name, archived.location(name)) for name in ("messages", "deliveries", "attempts", "sends")]
    return TemplateResponse(request, "console/message_archived.html", {
        "section": "messages", "archived": archived, "room": room, "locations": locations}, status=410)


@staff_required
@require_POST
def message_republish(request: HttpRequest, message_id: uuid.UUID) -> HttpResponse:
    """Send an unroutable message to the subscriptions it matches now."""
    require_permission(request, "delivery.change_delivery")
    message = get_object_or_404(Message, pk=message_id)
    try:
        published = republish(message)
    except RepublishRefused as refused:
        notices.error(request, str(refused))
    else:
        count = len(published.destinations)
        notices.success(request, f"Re-published to {count} destination{'' if count == 1 else 's'}.")
    return redirect("console:message-detail", message_id=message.pk)


def is_moving(delivery: Delivery) -> bool:
    """Say whether Dovecote itself will move this delivery on soon, so the page is worth polling.

    A message waiting for a pull consumer to pull it, or for a paused or disabled subscription to be
    resumed, may wait for days: the page stops polling and offers to look again.
    """
    if delivery.is_final or delivery.subscription is None:
        return False
    if delivery.status in (Delivery.Status.PENDING, Delivery.Status.LEASED):
        return True  # the outbox sends it; a lease runs out
    subscription = delivery.subscription
    return subscription.is_active and subscription.type == subscription.Type.PUSH
