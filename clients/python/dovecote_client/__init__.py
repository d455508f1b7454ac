"""A thin layer over `dovecote_api`, the client generated from Dovecote's OpenAPI schema.

`dovecote_api` performs every operation; this package adds only what a generated client cannot know:
replies turned into values or exceptions (`Dovecote.call`), every page of a list (`Dovecote.pages`),
publishing that is safe to retry (`Dovecote.publish`, `publish_batch`: idempotency keys and
correlation ids) and a pull-ack loop (`Dovecote.consume`).
"""

from __future__ import annotations

from dovecote_client.consume import Consumed, DeadLetter, Retry
from dovecote_client.dovecote import Dovecote, DovecoteError, Event

__all__ = ["Consumed", "DeadLetter", "Dovecote", "DovecoteError", "Event", "Retry"]
