"""What every UI view shares: the staff-only check, page-or-fragment rendering, keyset pages."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.cache import patch_vary_headers
from django_htmx.http import HttpResponseClientRedirect

from dovecote.inputs import read_id

View = Callable[..., HttpResponse]


def staff_required(view: View) -> View:
    """Let only signed-in staff users through: others are sent to log in, non-staff get 403."""

    @wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            if request.htmx:
                # Swapping the login page into a fragment would help nobody: send the whole browser
                # there, and back to the page (not the fragment's URL) afterwards.
                back = request.htmx.current_url_abs_path or request.get_full_path()
                return HttpResponseClientRedirect(redirect_to_login(back).url)
            return redirect_to_login(request.get_full_path())
        if not request.user.is_staff:
            raise PermissionDenied("the operator UI is for staff users")
        return view(request, *args, **kwargs)

    return checked


def require_permission(request: HttpRequest, permission: str) -> None:
    """Refuse (403) a user without `permission`: every change needs more than staff status (docs/security.md)."""
    if not request.user.has_perm(permission):
        raise PermissionDenied(f"this action needs the permission {permission!r}; ask an administrator")


def require_any_permission(request: HttpRequest, *permissions: str) -> None:
    """Refuse (403) a user with none of `permissions`: a fragment of two pages is as protected as either."""
    if not any(request.user.has_perm(permission) for permission in permissions):
        wanted = " or ".join(repr(p) for p in permissions)
        raise PermissionDenied(f"this needs the permission {wanted}; ask an administrator")


def render_page(request: HttpRequest, template: str, context: dict[str, Any], *,
                fragments: Iterable[str] = ()) -> TemplateResponse:
    """Render `template`, or only its partial named by the htmx target's id when it is one of `fragments`."""
    fragment = wanted_fragment(request, fragments)
    response = TemplateResponse(request, f"{template}#{fragment}" if fragment else template, context)
    # The same URL answers with a page or a fragment: caches (and the back button) must tell them apart.
    patch_vary_headers(response, ["HX-Request", "HX-Target"])
    return response


def wanted_fragment(request: HttpRequest, fragments: Iterable[str]) -> str | None:
    """Return the fragment an htmx request asks for, or None when the whole page is wanted."""
    target = request.htmx.target if request.htmx else None
    return target if target in set(fragments) else None


@dataclass(frozen=True)
class KeysetPage:
    """One page of rows ordered newest first by id, with the ids to ask for the pages around it."""

    rows: list[Any]
    newer: int | None  # pass as ?after= for the previous (newer) page
    older: int | None  # pass as ?before= for the next (older) page


def keyset_page(rows: QuerySet, request: HttpRequest, size: int = 50) -> KeysetPage:
    """Cut one page from `rows` by id (?before= / ?after=): one LIMIT query however long the table."""
    before, after = id_param(request, "before"), id_param(request, "after")
    if after is not None:
        chunk = list(rows.filter(pk__gt=after).order_by("pk")[: size + 1])
        more_newer, chunk = len(chunk) > size, chunk[:size][::-1]
        return KeysetPage(chunk, chunk[0].pk if more_newer and chunk else None, chunk[-1].pk if chunk else None)
    if before is not None:
        rows = rows.filter(pk__lt=before)
    chunk = list(rows.order_by("-pk")[: size + 1])
    more_older, chunk = len(chunk) > size, chunk[:size]
    return KeysetPage(chunk, chunk[0].pk if before is not None and chunk else None,
                      chunk[-1].pk if more_older else None)


def id_param(request: HttpRequest, name: str) -> int | None:
    """Return an id query parameter, ignoring a missing, malformed or out-of-range one."""
    return read_id(request.GET.get(name, ""))


def query_without(request: HttpRequest, *names: str) -> str:
    """Return the query string minus `names` (to build page links that keep the filters)."""
    params = request.GET.copy()
    for name in names:
        params.pop(name, None)
    return params.urlencode()


def posted(request: HttpRequest) -> Any:
    """Return the POST data to bind a form with, or None on GET (an empty POST must still be validated)."""
    return request.POST if request.method == "POST" else None
