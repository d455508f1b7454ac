"""The fields and field groups the console's forms share: bounded numbers and JSON, id choices, settings."""

from __future__ import annotations

import math
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.fields import InvalidJSONInput, JSONString
from django.utils.text import capfirst

from dovecote.inputs import BadJson, parse_json, read_id
from rooms.rules import (
    MAX_ATTEMPTS,
    MAX_BREAKER_THRESHOLD,
    MAX_BREAKER_WINDOW_S,
    MAX_DELAY_MS,
    MAX_DISABLE_AFTER_S,
    MAX_MULTIPLIER,
    MAX_PROBE_DELAY_MS,
    MAX_SPAN_MS,
    MIN_BREAKER_WINDOW_S,
    MIN_DISABLE_AFTER_S,
    MIN_PROBE_DELAY_MS,
    cap_below_delay,
)

DATETIME_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"]


class FiniteFloatField(forms.FloatField):
    """A float that is a number: "nan" and "inf" pass FloatField's min/max checks."""

    def to_python(self, value: Any) -> float | None:
        number = super().to_python(value)
        if number is not None and not math.isfinite(number):
            raise ValidationError("Enter a finite number.", code="invalid")
        return number


class BoundedJSONField(forms.JSONField):
    """A JSON text field read by the API's JSON reader: bounded depth, finite numbers, a message naming the fault."""

    def to_python(self, value: Any) -> Any:
        if self.disabled or value in self.empty_values or not isinstance(value, str):
            return super().to_python(value)
        try:
            converted = parse_json(value)
        except BadJson as error:
            raise ValidationError(f"Enter a valid JSON. {capfirst(str(error))}.", code="invalid") from None
        return JSONString(converted) if isinstance(converted, str) else converted

    def bound_data(self, data: Any, initial: Any) -> Any:
        if self.disabled or data is None:
            return super().bound_data(data, initial)
        try:
            return parse_json(data)
        except BadJson:
            return InvalidJSONInput(data)  # shown again as typed, beside the error


class IdChoiceMixin:
    """Read a model choice's value as an id first: a value no id can have is an invalid choice, not a query."""

    error_messages: dict[str, str]

    def clean_id(self, value: Any) -> Any:
        if value in (None, "") or read_id(value) is not None:
            return value
        raise ValidationError(self.error_messages["invalid_choice"], code="invalid_choice",
                              params={"value": str(value)[:40]})


class IdChoiceField(IdChoiceMixin, forms.ModelChoiceField):
    def to_python(self, value: Any) -> Any:
        return super().to_python(self.clean_id(value))


class IdMultipleChoiceField(IdChoiceMixin, forms.ModelMultipleChoiceField):
    def clean(self, value: Any) -> Any:
        for item in value or []:
            self.clean_id(item)
        return super().clean(value)


def delay_field(**options: Any) -> forms.IntegerField:
    return forms.IntegerField(min_value=0, max_value=MAX_DELAY_MS, label="Delay (ms)", **options)


def multiplier_field(**options: Any) -> FiniteFloatField:
    return FiniteFloatField(min_value=1.0, max_value=MAX_MULTIPLIER, label="Multiplier", **options)


def attempts_field(**options: Any) -> forms.IntegerField:
    return forms.IntegerField(min_value=0, max_value=MAX_ATTEMPTS, label="Redeliveries", **options)


def cap_field(**options: Any) -> forms.IntegerField:
    return forms.IntegerField(min_value=0, max_value=MAX_SPAN_MS, required=False, label="Longest delay (ms)", **options)


def check_delay_cap(form: forms.Form, delay_ms: int | None, cap_ms: int | None) -> None:
    """Refuse a cap below the delay it caps (rooms/rules.py)."""
    if cap_below_delay(delay_ms, cap_ms):
        form.add_error("max_delivery_delay_ms", f"Must be at least the delay ({delay_ms} ms); "
                                                "use multiplier 1 for a fixed delay.")


BREAKER_FIELDS = ["breaker_failure_threshold", "breaker_failure_ratio", "breaker_window_s", "breaker_probe_delay_ms",
                  "breaker_disable_after_s"]


class BreakerFields(forms.Form):
    """The circuit breaker's settings: a room's defaults, or a subscription's overrides of them."""

    breaker_failure_threshold = forms.IntegerField(
        min_value=0, max_value=MAX_BREAKER_THRESHOLD, required=False, label="Opens after consecutive failures",
        help_text="0: never on this rule.")
    breaker_failure_ratio = FiniteFloatField(
        min_value=0.0, max_value=1.0, required=False, label="Opens at failure ratio",
        help_text="Of at least 20 attempts in the window, 0–1; 0: never on this rule.")
    breaker_window_s = forms.IntegerField(min_value=MIN_BREAKER_WINDOW_S, max_value=MAX_BREAKER_WINDOW_S,
                                          required=False, label="Ratio window (s)")
    breaker_probe_delay_ms = forms.IntegerField(
        min_value=MIN_PROBE_DELAY_MS, max_value=MAX_PROBE_DELAY_MS, required=False, label="First probe after (ms)",
        help_text="Doubled after each failed probe, at most 10 minutes.")
    breaker_disable_after_s = forms.IntegerField(
        min_value=MIN_DISABLE_AFTER_S, max_value=MAX_DISABLE_AFTER_S, required=False, label="Disable when open for (s)")

    def keep_unset_breaker_settings(self, data: dict[str, Any]) -> None:
        """A room's setting left empty keeps its value (the default for a new room): rooms have no "unset"."""
        for name in BREAKER_FIELDS:
            if data.get(name) is None:
                data[name] = getattr(self.instance, name)  # type: ignore[attr-defined]


class OptionalJSONField(BoundedJSONField):
    """A JSON field that may be left empty: no value shows as an empty box, not as `null`."""

    def prepare_value(self, value: Any) -> Any:
        return "" if value is None else super().prepare_value(value)


class DateTimeLocalInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self) -> None:
        super().__init__(format="%Y-%m-%dT%H:%M")
