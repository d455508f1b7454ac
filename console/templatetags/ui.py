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
def is_summarised(error: str | None) -> bool:
    """Say whether the summary leaves something out, so the full text is worth offering."""
    error = error or ""
    return text.error_summary(error) != " ".join(error.split())


@register.filter
def ago(moment: datetime | None) -> str:
    return text.ago(moment)
