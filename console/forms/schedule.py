"""The schedule preview's form: the delivery settings of a room's or a subscription's form."""

from __future__ import annotations

from typing import Any

from django import forms

from console.forms.fields import attempts_field, cap_field, delay_field, multiplier_field
from rooms.models import Room
from rooms.rules import (
    MAX_SPAN_MS,
)
from subscriptions.retry import RetryPolicy

RETRY_FIELDS = ("delivery_delay_ms", "delivery_delay_multiplier", "delivery_attempts", "max_delivery_delay_ms")


class RetrySettingsForm(forms.Form):
    """The delivery settings alone, read from a room's or a subscription's form for the schedule preview.

    Without `overrides_of` the values are a room's own; with it they are a subscription's overrides
    and that room's values stand in for the blank ones.
    """

    delivery_delay_ms = delay_field(required=False)
    delivery_delay_multiplier = multiplier_field(required=False)
    delivery_attempts = attempts_field(required=False)
    max_delivery_delay_ms = cap_field()
    message_expiration_ms = forms.IntegerField(min_value=0, max_value=MAX_SPAN_MS, required=False)

    def __init__(self, data: Any, *, overrides_of: Room | None = None) -> None:
        super().__init__(data)
        self.overrides_of = overrides_of

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.overrides_of is None:
            for name in RETRY_FIELDS[:3]:
                if data.get(name) is None and name not in self.errors:
                    self.add_error(name, "Needed for the schedule.")
        return data

    def policy(self) -> tuple[RetryPolicy, dict[str, str]]:
        """Return the effective policy and, for each setting, whether it is set here or the room's."""
        data, room = self.cleaned_data, self.overrides_of
        values, sources = {}, {}
        for name in RETRY_FIELDS:
            own = room is None or data.get(name) is not None
            values[name] = data.get(name) if own else getattr(room, name)
            sources[name] = "set here" if own else "room's value"
        policy = RetryPolicy(delay_ms=values["delivery_delay_ms"], multiplier=values["delivery_delay_multiplier"],
                             attempts=values["delivery_attempts"], max_delay_ms=values["max_delivery_delay_ms"])
        return policy, sources

    @property
    def expiration_ms(self) -> int | None:
        """Return the message expiration the schedule is cut by: the room's, or the room form's value."""
        if self.overrides_of is not None:
            return self.overrides_of.message_expiration_ms
        return self.cleaned_data.get("message_expiration_ms")
