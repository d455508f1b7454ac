"""The demo's built-in webhook receiver, a view of the demo's own web server that fails now and then."""

from __future__ import annotations

import random

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

FAILURE_RATE = 0.25


@csrf_exempt
@require_POST
def receiver(request: HttpRequest) -> HttpResponse:
    """A webhook receiver that fails about one attempt in four, so retries show."""
    if random.random() < FAILURE_RATE:
        response = HttpResponse("demo receiver: simulated failure\n", status=random.choice([500, 502, 503]))
        response._has_been_logged = True  # a simulated failure is not a server error worth a log line
        return response
    return HttpResponse(status=204)


RECEIVER_PATH = "/demo/receiver/"


def receiver_url(base_url: str) -> str:
    return f"{base_url}{RECEIVER_PATH}"
