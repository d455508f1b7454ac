"""Refuse request bodies over the size limit with 413 before anything reads them; never redirect an API request."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware import common


class BodySizeLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.DOVECOTE_MAX_BODY_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return JsonResponse({"detail": "Content-Length is not a number"}, status=400)
        if length > limit:
            return JsonResponse(
                {"detail": f"request body is {length} bytes; the limit is {limit} bytes"}, status=413
            )
        return self.get_response(request)


class CommonMiddleware(common.CommonMiddleware):
    """Django's, except that an API path missing its trailing slash is not redirected.

    APPEND_SLASH answers 301, and clients follow it with a GET and no body: a POST to `/api/v1/rooms`
    was lost. Such a path gets the API's JSON 404 instead, naming the path with the slash (api/errors.py).
    """

    def should_redirect_with_slash(self, request: HttpRequest) -> bool:
        return not request.path_info.startswith("/api/") and super().should_redirect_with_slash(request)
