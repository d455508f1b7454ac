"""What a handler can tell Dovecote besides "handled": stop sending, or slow down.

Raising either rolls the inbox transaction back (the push is not recorded as handled) and sets the
reply's status: Dovecote disables the subscription on 410 and, on 429 or 503, waits at least
`Retry-After` before its next attempt.
"""

from __future__ import annotations


class Unsubscribe(Exception):
    """Answer 410 Gone: Dovecote disables the subscription until someone resumes it."""

    status = 410


class SlowDown(Exception):
    """Answer 429 (or 503) with `Retry-After`: Dovecote retries this push no sooner than that."""

    def __init__(self, retry_after_s: int, *, status: int = 429) -> None:
        if status not in (429, 503):
            raise ValueError("slow down with 429 Too Many Requests or 503 Service Unavailable")
        super().__init__(f"retry after {retry_after_s} s")
        self.retry_after_s = max(1, int(retry_after_s))
        self.status = status
