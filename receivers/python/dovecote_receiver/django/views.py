"""`push_receiver`: turn a function of a Push into a Django view that receives Dovecote's pushes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from dovecote_receiver.core import receive
from dovecote_receiver.django.models import InboxMessage
from dovecote_receiver.push import Push
from dovecote_receiver.signature import DEFAULT_TOLERANCE_S, Verifier
from dovecote_receiver.wsgi import refusal

View = Callable[[HttpRequest], HttpResponse]


def push_receiver(*, secrets: Sequence[str] | None = None, secrets_setting: str = "DOVECOTE_WEBHOOK_SECRETS",
                  tolerance_s: int = DEFAULT_TOLERANCE_S, using: str = "default",
                  max_body_bytes: int = 1024 * 1024) -> Callable[[Callable[[Push], object]], View]:
    """Decorate `handler(push)`: the view verifies, stores the push in the inbox and runs the handler atomically.

    The secrets are `secrets`, or else the setting named `secrets_setting` (a list: the current secret
    and, during a rotation, the previous one), read on every request so a deploy can change them.
    """
    def decorate(handler: Callable[[Push], object]) -> View:
        @csrf_exempt
        def view(request: HttpRequest) -> HttpResponse:
            reply = refusal(request.method or "", request.headers.get("Content-Length") or "0", max_body_bytes)
            if reply is None:
                verifier = Verifier(secrets or getattr(settings, secrets_setting), tolerance_s=tolerance_s)
                reply = receive(verifier, lambda push: store(push, handler, using), request.headers, request.body)
            return HttpResponse(reply.content(), status=reply.status, headers=dict(reply.header_list()))

        view.__name__ = getattr(handler, "__name__", "push_receiver")
        view.__doc__ = handler.__doc__
        return view

    return decorate


def store(push: Push, handler: Callable[[Push], object], using: str) -> bool:
    """Record the push and run the handler in one transaction; False if the inbox already holds it."""
    with transaction.atomic(using=using):
        try:
            with transaction.atomic(using=using):  # a savepoint: a duplicate leaves the outer block usable
                InboxMessage.objects.using(using).create(
                    webhook_id=push.id, event_type=push.type, event_version=push.version, room=push.room,
                    correlation_id=push.correlation_id, attempt=push.attempt,
                    body=push.body.decode(errors="replace"),
                )
        except IntegrityError:
            return False
        handler(push)
    return True
