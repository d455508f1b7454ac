"""Subscriptions: list, create and edit (with the retry-schedule preview), detail and its actions."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.forms.subscriptions import FilterCheckForm, RotateSecretForm, SubscriptionForm, TestEventForm
from console.schedule import schedule_context, settings_values
from console.shortcuts import posted, render_page, require_any_permission, require_permission, staff_required
from console.text import counted
from delivery import sequencing
from delivery.actions import delete_subscription, resume_subscription
from delivery.models import Delivery
from delivery.publish import Event, PublishRejected, publish
from dovecote.inputs import read_id
from rooms.models import EventType, Room
from subscriptions.models import Subscription

PAGE_SIZE = 50
Status = Delivery.Status
Ordering = Subscription.Ordering
IN_FLIGHT = [Status.PENDING, Status.QUEUED, Status.RETRYING, Status.LEASED]
# The subscription form's fragments serve the create and the edit page alike.
FORM_PERMISSIONS = ("subscriptions.add_subscription", "subscriptions.change_subscription")


@staff_required
@require_GET
def subscription_list(request: HttpRequest) -> TemplateResponse:
    """List every subscription (filtered by room, type, status) with its in-flight and dead-letter counts."""
    rows = Subscription.objects.select_related("room").order_by("room__name", "name")
    filters = {name: request.GET[name] for name in ("room", "type", "status") if request.GET.get(name)}
    if (room_id := read_id(filters.get("room", ""))) is not None:
        rows = rows.filter(room_id=room_id)
    if filters.get("type") in Subscription.Type.values:
        rows = rows.filter(type=filters["type"])
    if filters.get("status") in Subscription.Status.values:
        rows = rows.filter(status=filters["status"])
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    counts = subscription_counts([s.pk for s in page])
    return render_page(request, "console/subscription_list.html", {
        "section": "subscriptions", "page": page, "rows": [(s, counts.get(s.pk, {})) for s in page],
        "filters": filters, "rooms": Room.objects.only("id", "name").order_by("name"),
        "types": Subscription.Type.values, "statuses": Subscription.Status.values,
    })


def subscription_counts(subscription_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """Count each subscription's deliveries in flight, waiting (Delivery.WAITING) and dead-lettered, in one query."""
    counts: dict[int, dict[str, int]] = defaultdict(lambda: {"in_flight": 0, "waiting": 0, "dead_letters": 0})
    rows = (Delivery.objects.filter(subscription_id__in=list(subscription_ids),
                                    status__in=[*IN_FLIGHT, *Delivery.WAITING, Status.DEAD_LETTERED],
                                    purged_at__isnull=True)
            .values("subscription_id", "status").annotate(n=Count("pk")).order_by())
    for row in rows:
        tally = counts[row["subscription_id"]]
        tally["in_flight"] += row["n"] if row["status"] in IN_FLIGHT else 0
        tally["waiting"] += row["n"] if row["status"] in Delivery.WAITING else 0
        tally["dead_letters"] += row["n"] if row["status"] == Status.DEAD_LETTERED else 0
    return dict(counts)


@staff_required
@require_http_methods(["GET", "POST"])
def subscription_create(request: HttpRequest, room_id: int) -> HttpResponse:
    """Subscribe to a room; a push subscription's signing secret is shown once, on the next page."""
    require_permission(request, "subscriptions.add_subscription")
    room = get_object_or_404(Room, pk=room_id)
    form = SubscriptionForm(posted(request), room=room, initial={"type": Subscription.Type.PUSH})
    if request.method == "POST" and form.is_valid():
        subscription = form.save()
        messages.success(request, f"Subscription {subscription.name} created.")
        if subscription.type == Subscription.Type.PUSH:
            return show_secret_once(request, subscription, "created")
        return redirect("console:subscription-detail", subscription_id=subscription.pk)
    return subscription_form_page(request, form, room)


@staff_required
@require_http_methods(["GET", "POST"])
def subscription_edit(request: HttpRequest, subscription_id: int) -> HttpResponse:
    """Change a subscription's URL, filter, overrides and limits (not its type)."""
    require_permission(request, "subscriptions.change_subscription")
    subscription = get_object_or_404(Subscription.objects.select_related("room"), pk=subscription_id)
    form = SubscriptionForm(posted(request), room=subscription.room, instance=subscription)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, f"Subscription {subscription.name} saved. New settings apply to retries "
                                  "scheduled from now on.")
        return redirect("console:subscription-detail", subscription_id=subscription.pk)
    return subscription_form_page(request, form, subscription.room)


def subscription_form_page(request: HttpRequest, form: SubscriptionForm, room: Room) -> TemplateResponse:
    values = form.data if form.is_bound else settings_values(form.instance)
    check = FilterCheckForm(request.POST if request.method == "POST" else None, room=room)
    verdict, reasons = check.verdict() if check.is_bound else ("empty", [])
    return render_page(request, "console/subscription_form.html", {
        "section": "subscriptions", "form": form, "room": room, "check": check, "verdict": verdict,
        "reasons": reasons,
        "subscription": form.instance if form.instance.pk else None, **schedule_context(values, room),
    })


@staff_required
@require_POST
def subscription_schedule_preview(request: HttpRequest, room_id: int) -> TemplateResponse:
    """Render the retry-schedule preview of the subscription form's current overrides (an htmx fragment)."""
    require_any_permission(request, *FORM_PERMISSIONS)
    room = get_object_or_404(Room, pk=room_id)
    return TemplateResponse(request, "console/subscription_form.html#schedule", schedule_context(request.POST, room))


@staff_required
@require_POST
def subscription_filter_check(request: HttpRequest, room_id: int) -> TemplateResponse:
    """Say whether the subscription form's sample payload passes its payload filter (an htmx fragment)."""
    require_any_permission(request, *FORM_PERMISSIONS)
    room = get_object_or_404(Room, pk=room_id)
    verdict, reasons = FilterCheckForm(request.POST, room=room).verdict()
    return TemplateResponse(request, "console/subscription_form.html#filter-check",
                            {"verdict": verdict, "reasons": reasons})


@staff_required
@require_GET
def subscription_detail(request: HttpRequest, subscription_id: int) -> TemplateResponse:
    """Show a subscription: status, settings and their schedule, recent deliveries, and its actions."""
    subscription = get_object_or_404(Subscription.objects.select_related("room"), pk=subscription_id)
    event_type = first_matching_event_type(subscription)
    # The payload box starts with a sample the event type's schema accepts (or {} beside the schema).
    initial = {"payload": event_type.sample_payload()} if event_type else {}
    return subscription_detail_page(request, subscription, TestEventForm(initial=initial))


def subscription_detail_page(request: HttpRequest, subscription: Subscription,
                             test_form: TestEventForm) -> TemplateResponse:
    recent = (Delivery.objects.filter(subscription=subscription).select_related("message")
              .order_by("-pk")[:10])
    return render_page(request, "console/subscription_detail.html", {
        "section": "subscriptions", "subscription": subscription, "room": subscription.room,
        "counts": subscription_counts([subscription.pk]).get(subscription.pk, {}), "recent": recent,
        "test_form": test_form, "test_event_type": first_matching_event_type(subscription),
        "payload_filter": json.dumps(subscription.payload_filter, ensure_ascii=False),
        "parked_keys": sequencing.parked_keys(subscription) if subscription.ordering == Ordering.PARK else [],
        "breaker": subscription.breaker_policy, "breaker_history": subscription.breaker_history(20),
        "now": timezone.now(),
        **schedule_context(settings_values(subscription), subscription.room),
    })


def first_matching_event_type(subscription: Subscription) -> EventType | None:
    """Return the first of the room's event types (by name and version) the subscription's filter lets through."""
    types = subscription.room.event_types.order_by("name", "version")
    return next((t for t in types if subscription.matches(t.name, t.version)), None)


@staff_required
@require_POST
def subscription_pause(request: HttpRequest, subscription_id: int) -> HttpResponse:
    """Pause a subscription: messages published meanwhile are kept for it until it is resumed."""
    require_permission(request, "subscriptions.pause_subscription")
    subscription = get_object_or_404(Subscription, pk=subscription_id)
    subscription.pause(by=f"by {request.user.get_username()} in the web UI")
    messages.success(request, f"Subscription {subscription.name} paused: new events wait for it until you resume it.")
    return redirect("console:subscription-detail", subscription_id=subscription.pk)


@staff_required
@require_POST
def subscription_resume(request: HttpRequest, subscription_id: int) -> HttpResponse:
    """Resume a paused or disabled subscription; what waits in its queue flows again."""
    require_permission(request, "subscriptions.pause_subscription")
    subscription = get_object_or_404(Subscription, pk=subscription_id)
    resume_subscription(subscription)
    messages.success(request, f"Subscription {subscription.name} resumed.")
    return redirect("console:subscription-detail", subscription_id=subscription.pk)


@staff_required
@require_http_methods(["GET", "POST"])
def subscription_rotate_secret(request: HttpRequest, subscription_id: int) -> HttpResponse:
    """Ask to confirm and for the overlap, then replace the signing secret and show the new one."""
    require_permission(request, "subscriptions.change_subscription")
    subscription = get_object_or_404(Subscription.objects.select_related("room"), pk=subscription_id)
    if subscription.type != Subscription.Type.PUSH:
        messages.error(request, "Only push subscriptions have a signing secret.")
        return redirect("console:subscription-detail", subscription_id=subscription.pk)
    default_hours = settings.DOVECOTE_SECRET_OVERLAP_SECONDS // 3600
    form = RotateSecretForm(posted(request), initial={"overlap_hours": default_hours})
    if request.method == "POST" and request.POST.get("confirmed") and form.is_valid():
        hours = form.cleaned_data["overlap_hours"]
        subscription.rotate_signing_secret(None if hours is None else timedelta(hours=hours))
        return show_secret_once(request, subscription, "rotated")
    return render_page(request, "console/subscription_rotate_confirm.html", {
        "section": "subscriptions", "subscription": subscription, "room": subscription.room, "form": form,
        "old_secret_until": subscription.old_secret_until(),
    })


@staff_required
@require_POST
def subscription_end_secret_overlap(request: HttpRequest, subscription_id: int) -> HttpResponse:
    """Stop signing with the previous secret now, before its overlap ends."""
    require_permission(request, "subscriptions.change_subscription")
    subscription = get_object_or_404(Subscription, pk=subscription_id)
    subscription.end_secret_overlap()
    messages.success(request, f"Subscription {subscription.name} now signs with its current secret only.")
    return redirect("console:subscription-detail", subscription_id=subscription.pk)


def secret_key(subscription_id: int) -> str:
    return f"signing-secret-{subscription_id}"


def secret_fingerprint(secret: str) -> str:
    """Return a keyed hash that tells a secret apart and reveals nothing of it."""
    return salted_hmac("console.subscription-secret", secret, algorithm="sha256").hexdigest()


def show_secret_once(request: HttpRequest, subscription: Subscription, event: str) -> HttpResponse:
    """Allow this session one showing of the new secret, and send the browser to the page that shows it.

    Redirecting after the POST means a reload never repeats the creation or the rotation. The secret
    is never put in a URL nor in the session (a table of its own, readable base64): the session holds
    its fingerprint, and the page shows the secret from the subscription's row, where it is encrypted,
    while it is still the one made here.
    """
    request.session[secret_key(subscription.pk)] = {"fingerprint": secret_fingerprint(subscription.signing_secret),
                                                    "event": event}
    return redirect("console:subscription-secret", subscription_id=subscription.pk)


@staff_required
@require_GET
def subscription_secret(request: HttpRequest, subscription_id: int) -> TemplateResponse:
    """Show a new signing secret once: a second look (a reload, the back button) finds it gone."""
    subscription = get_object_or_404(Subscription.objects.select_related("room"), pk=subscription_id)
    shown = request.session.pop(secret_key(subscription.pk), None) or {}
    secret = subscription.signing_secret
    if shown and not constant_time_compare(shown.get("fingerprint", ""), secret_fingerprint(secret)):
        messages.warning(request, "The signing secret was rotated again before this page could show it: "
                                  "the one made here is no longer the current one.")
        shown = {}
    response = render_page(request, "console/subscription_secret.html", {
        "section": "subscriptions", "subscription": subscription,
        "secret": secret if shown else None, "event": shown.get("event"),
    })
    response["Cache-Control"] = "no-store"
    return response


@staff_required
@require_POST
def subscription_test_event(request: HttpRequest, subscription_id: int) -> HttpResponse:
    """Publish a test event of the first event type the subscription matches, to it alone; then show the message."""
    require_permission(request, "delivery.add_message")
    subscription = get_object_or_404(Subscription.objects.select_related("room"), pk=subscription_id)
    form = TestEventForm(request.POST)
    event_type = first_matching_event_type(subscription)
    if event_type is None:
        form.add_error(None, "The room has no event type this subscription matches: add one first.")
    if not form.is_valid():
        return subscription_detail_page(request, subscription, form)
    event = Event(event_type=event_type.name, event_version=event_type.version,
                  payload=form.cleaned_data["payload"], correlation_id=form.cleaned_data["correlation_id"])
    try:
        published = publish(subscription.room, event, only=subscription)
    except PublishRejected as rejected:
        for field, errors in rejected.errors.items():
            if field == "payload":  # the schema refused it: say whose, beside the schema shown under the box
                form.add_error("payload", [f"Not valid for the schema of {event_type}: {e}" for e in errors])
            else:
                form.add_error(None, [f"{field}: {e}" for e in errors])
        return subscription_detail_page(request, subscription, form)
    reached = len(published.destinations)
    messages.success(request, f"Test event {event_type.name} v{event_type.version} published to "
                              f"{counted(reached, 'destination')}: {subscription.name} only.")
    return redirect("console:message-detail", message_id=published.message_id)


@staff_required
@require_POST
def subscription_release_key(request: HttpRequest, subscription_id: int) -> HttpResponse:
    """Let a parked ordering key move on: its next event is sent; its dead letter stays, replayable."""
    require_permission(request, "delivery.change_delivery")
    subscription = get_object_or_404(Subscription, pk=subscription_id)
    key = request.POST.get("ordering_key", "")
    try:
        released = sequencing.release_parked_key(subscription, key)
    except sequencing.KeyNotParked as refused:
        messages.error(request, f"{refused}.")
    else:
        then = "its next event is on its way" if released else "no event of it was waiting"
        messages.success(request, f"Ordering key {key!r} released: {then}.")
    return redirect("console:subscription-detail", subscription_id=subscription.pk)


@staff_required
@require_http_methods(["GET", "POST"])
def subscription_delete(request: HttpRequest, subscription_id: int) -> HttpResponse:
    """Ask to confirm, then delete a subscription (what is still on its way is dead-lettered first)."""
    require_permission(request, "subscriptions.delete_subscription")
    subscription = get_object_or_404(Subscription.objects.select_related("room"), pk=subscription_id)
    room_id = subscription.room_id
    if request.method == "POST":
        dead_lettered = delete_subscription(subscription)
        unsettled = counted(dead_lettered, "unsettled delivery", "unsettled deliveries")
        messages.success(request, f"Subscription {subscription.name} deleted; {unsettled} dead-lettered.")
        return redirect("console:room-detail", room_id=room_id)
    in_flight = subscription_counts([subscription.pk]).get(subscription.pk, {}).get("in_flight", 0)
    return render_page(request, "console/confirm_delete.html", {
        "section": "subscriptions", "what": f"subscription {subscription.name} of room {subscription.room.name}",
        "cancel_url": reverse("console:subscription-detail", kwargs={"subscription_id": subscription.pk}),
        "consequences": [(f"its {counted(in_flight, 'delivery', 'deliveries')} still on the way "
                          f"{'is' if in_flight == 1 else 'are'} dead-lettered (they stay in the log)"),
                         "its queues on the broker are emptied"],
    })
