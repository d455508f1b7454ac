"""DRF exception handling: a body Django refused as too large is a 413, not a 400."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DOVECOTE_MAX_BODY_BYTES
        return Response({"detail": f"request body is over the limit of {limit} bytes"}, status=413)
    return drf_exception_handler(exc, context)
