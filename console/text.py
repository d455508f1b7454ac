"""How the UI words things: error summaries, counts with their noun, times relative to now, durations, ratios."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone
from django.utils.timesince import timesince

from dovecote.error_text import ERROR_CHARS, readable

SUMMARY_CHARS = 90


def error_summary(error: str, limit: int = SUMMARY_CHARS) -> str:
    """Return the gist of an error on one line: an HTML body reduced to its text, cut to `limit` characters."""
    return readable(error, limit)


def error_text(error: str) -> str:
    """Return an error in full as the UI shows it: readable and bounded, even a row from before errors were."""
    return readable(error, ERROR_CHARS)


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


UNITS = [("day", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)]


def duration(ms: float | None) -> str:
    """Say how long `ms` is in the two largest units that matter (5 days, 1 h 5 min, 4.5 s, 250 ms)."""
    if ms is None:
        return "—"
    ms = round(ms)
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:g} s" if ms % 100 == 0 else f"{ms / 1000:.2f} s"
    parts = []
    rest = ms
    for unit, size in UNITS:
        if rest >= size:
            count = rest // size
            parts.append(f"{count} {unit}s" if unit == "day" and count > 1 else f"{count} {unit}")
            rest %= size
        if len(parts) == 2 or (parts and rest == 0):
            break
    return " ".join(parts[:2])


def seconds(value: float | None) -> str:
    """Say how long `value` seconds is as `duration` does: 432000 reads "5 days" (whole seconds from one on)."""
    if value is None:
        return "—"
    return duration(value * 1000 if value < 1 else round(value) * 1000)


def percent(ratio: float | None) -> str:
    """Write a ratio as a percentage: 0.5 reads "50%", 0.975 "97.5%"."""
    if ratio is None:
        return "—"
    return f"{ratio * 100:.1f}".removesuffix(".0") + "%"
