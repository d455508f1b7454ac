"""How the UI words things: error summaries, counts with their noun, times relative to now."""

from __future__ import annotations

import html
import re
from datetime import datetime

from django.utils import timezone
from django.utils.timesince import timesince

SUMMARY_CHARS = 90
MARKUP = re.compile(r"<[a-zA-Z!/]")
INVISIBLE = re.compile(r"<(head|script|style)\b.*?</\1\s*>", re.DOTALL | re.IGNORECASE)
TAG = re.compile(r"<[^>]*>")
SPACE = re.compile(r"\s+")


def error_summary(error: str, limit: int = SUMMARY_CHARS) -> str:
    """Return the gist of an error on one line: an HTML body reduced to its text, cut to `limit` characters.

    "HTTP 501: <!DOCTYPE HTML><html>…<h1>Error response</h1><p>Error code: 501</p>…" reads
    "HTTP 501: Error response · Error code: 501 · Message: Unsupported method ('POST'). · …".
    """
    start = MARKUP.search(error)
    if start is None:
        text = SPACE.sub(" ", error).strip()
    else:
        lead = SPACE.sub(" ", error[:start.start()]).strip()
        pieces = []
        for part in TAG.split(INVISIBLE.sub(" ", error[start.start():])):
            piece = SPACE.sub(" ", html.unescape(part)).strip()
            if piece and piece not in pieces:  # a page repeats its title as its heading
                pieces.append(piece)
        text = " ".join(part for part in (lead, " · ".join(pieces)) if part)
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """Return "1 dead letter", "2 dead letters", "0 deliveries" (with `plural` for irregular nouns)."""
    return f"{count} {singular if count == 1 else plural or singular + 's'}"


def ago(moment: datetime | None, now: datetime | None = None) -> str:
    """Say how long ago `moment` was: "just now" within the minute, else "3 minutes ago" and so on."""
    if moment is None:
        return ""
    now = now or timezone.now()
    if (now - moment).total_seconds() < 60:
        return "just now"
    return f"{timesince(moment, now)} ago"
