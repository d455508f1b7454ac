"""API keys: the list, a new key (its plaintext shown once), revoke."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_http_methods, require_POST

from console.forms.api_keys import ApiKeyForm
from console.shortcuts import posted, render_page, require_permission, staff_required
from rooms.models import ApiKey

PAGE_SIZE = 50


@staff_required
@require_http_methods(["GET", "POST"])
def api_key_list(request: HttpRequest) -> HttpResponse:
    """List the API keys and create one; a new key's plaintext is shown in the reply to its POST only."""
    form = ApiKeyForm(posted(request))
    if request.method == "POST":
        require_permission(request, "rooms.add_apikey")
    if request.method == "POST" and form.is_valid():
        key, plaintext = form.issue()
        response = render_page(request, "console/api_key_created.html",
                               {"section": "api_keys", "key": key, "plaintext": plaintext})
        response["Cache-Control"] = "no-store"
        return response
    # Live keys (revoked_at null) first, then the revoked ones; newest first within each.
    keys = ApiKey.objects.prefetch_related("rooms").order_by(F("revoked_at").desc(nulls_first=True), "-created_at")
    page = Paginator(keys, PAGE_SIZE).get_page(request.GET.get("page"))
    return render_page(request, "console/api_key_list.html", {"section": "api_keys", "form": form, "page": page})


@staff_required
@require_POST
def api_key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    """Revoke a key: it stops authenticating at once."""
    require_permission(request, "rooms.change_apikey")
    key = get_object_or_404(ApiKey, pk=key_id)
    if not key.is_revoked:
        key.revoke()
    messages.success(request, f"API key {key.name} ({key.prefix}…) revoked.")
    return redirect("console:api-key-list")
