"""Dead letters: which subscriptions have them, each one's list, and replay or purge after a confirmation."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, Max
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from console.forms.dead_letters import DeadLetterActionForm, DeadLetterFilterForm
from console.shortcuts import keyset_page, query_without, render_page, require_permission, staff_required
from console.text import counted
from delivery import dead_letters
from delivery.models import Delivery
from subscriptions.models import Subscription

PAGE_SIZE = 50
# Replaying sends messages again; purging removes them from the list for good.
DEAD_LETTER_PERMISSIONS = {"replay": "delivery.change_delivery", "purge": "delivery.delete_delivery"}
SHOWN_ON_CONFIRM = 100


@staff_required
@require_GET
def dead_letter_index(request: HttpRequest) -> TemplateResponse:
    """List the subscriptions that have dead letters, the most recent first."""
    rows = (Subscription.objects.select_related("room")
            .filter(deliveries__status=Delivery.Status.DEAD_LETTERED, deliveries__purged_at__isnull=True)
            .annotate(dead_letters=Count("deliveries"), latest=Max("deliveries__updated_at"))
            .order_by("-latest", "pk"))
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    return render_page(request, "console/dead_letter_index.html", {"section": "dead_letters", "page": page})


@staff_required
@require_GET
def dead_letter_list(request: HttpRequest, subscription_id: int) -> TemplateResponse:
    """List one subscription's dead letters, filtered by when they died and by error, to select and act on."""
    subscription = get_object_or_404(Subscription.objects.select_related("room"), pk=subscription_id)
    form = DeadLetterFilterForm(request.GET)
    rows = dead_letters.dead_letters(subscription, **form.filters()).select_related("message")
    return render_page(request, "console/dead_letter_list.html", {
        "section": "dead_letters", "subscription": subscription, "form": form,
        "page": keyset_page(rows, request, PAGE_SIZE), "filters": query_without(request, "before", "after"),
        "total": dead_letters.dead_letters(subscription).count(),
    })


@staff_required
@require_POST
def dead_letter_action(request: HttpRequest, subscription_id: int) -> HttpResponse:
    """Replay or purge the chosen dead letters once confirmed; until then show what would happen."""
    subscription = get_object_or_404(Subscription.objects.select_related("room"), pk=subscription_id)
    form = DeadLetterActionForm(request.POST)
    back = reverse("console:dead-letter-list", kwargs={"subscription_id": subscription.pk})
    if not form.is_valid():
        for error in form.errors.values():
            messages.error(request, " ".join(error))
        return redirect(back)
    require_permission(request, DEAD_LETTER_PERMISSIONS[form.action])
    chosen = form.chosen_ids()
    if not form.cleaned_data["confirmed"]:
        return confirm_page(request, subscription, form, back)
    if form.action == "replay":
        count = len(dead_letters.replay(subscription, chosen))
        messages.success(request, f"{counted(count, 'dead letter')} sent again, attempts counted from 1.")
    else:
        count = dead_letters.purge(subscription, chosen)
        messages.success(request, f"{counted(count, 'dead letter')} purged; their log stays for the reports.")
    return redirect(back)


def confirm_page(request: HttpRequest, subscription: Subscription, form: DeadLetterActionForm,
                 back: str) -> TemplateResponse:
    """Show what a replay or purge would touch, with the button that does it."""
    chosen = form.chosen_ids()
    rows = dead_letters.dead_letters(subscription)
    if chosen is not None:
        rows = rows.filter(message_id__in=chosen)
    count = rows.count()
    return render_page(request, "console/dead_letter_confirm.html", {
        "section": "dead_letters", "subscription": subscription, "action": form.action, "scope": form.scope,
        "choice": form.cleaned_data["choice"], "message_ids": chosen or [], "count": count,
        "shown": rows.select_related("message").order_by("-pk")[:SHOWN_ON_CONFIRM], "cancel_url": back,
    })
