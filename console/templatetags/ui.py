"""The UI's template filters (`{% load ui %}`): see console/text.py."""

from __future__ import annotations

from datetime import datetime

from django import template

from console import text

register = template.Library()


@register.filter
def error_summary(error: str | None) -> str:
    return text.error_summary(error or "")


@register.filter
def error_text(error: str | None) -> str:
    return text.error_text(error or "")


@register.filter
def is_summarised(error: str | None) -> bool:
    """Say whether the summary leaves something out, so the full text is worth offering."""
    error = error or ""
    return text.error_summary(error) != " ".join(error.split())


@register.filter
def ago(moment: datetime | None) -> str:
    return text.ago(moment)


@register.filter
def ms(value: float | None) -> str:
    """Milliseconds as a person reads them: "250 ms", "4.5 s", "1 h 5 min"."""
    return text.duration(value)


@register.filter
def seconds(value: float | None) -> str:
    """Seconds as a person reads them: 432000 reads "5 days", 90 "1 min 30 s"."""
    return text.seconds(value)


@register.filter
def percent(ratio: float | None) -> str:
    """A ratio as a percentage: 0.5 reads "50%"."""
    return text.percent(ratio)
