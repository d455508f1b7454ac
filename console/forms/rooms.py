"""The Rooms page's forms: a room's settings and a new event type."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.text import capfirst

from console.forms.fields import (
    BREAKER_FIELDS,
    BreakerFields,
    OptionalJSONField,
    attempts_field,
    cap_field,
    check_delay_cap,
    delay_field,
    multiplier_field,
)
from rooms.models import EventType, Room
from rooms.rules import (
    MAX_RETENTION_MS,
    MAX_SPAN_MS,
    MIN_RETENTION_MS,
    event_type_quota_problem,
)
from rooms.schemas import SchemaRefused, check_event_type_schema


class RoomForm(BreakerFields, forms.ModelForm):
    """A room's name and delivery settings."""

    message_expiration_ms = forms.IntegerField(
        min_value=0, max_value=MAX_SPAN_MS, required=False, label="Expiration (ms)",
        help_text="Messages not delivered within this long expire. Empty or 0: never.",
    )
    delivery_delay_ms = delay_field(initial=1000, help_text="d: redelivery k waits d × m^k.")
    delivery_delay_multiplier = multiplier_field(initial=2.0, help_text="m, at least 1.")
    delivery_attempts = attempts_field(initial=5, help_text="After the first attempt; 0: none.")
    max_delivery_delay_ms = cap_field(help_text="Cap on each delay. Empty: no cap.")
    retention_ms = forms.IntegerField(
        min_value=MIN_RETENTION_MS, max_value=MAX_RETENTION_MS, required=False, label="Retention (ms)",
        help_text="Settled messages older than this move to the archive; 3600000 (1 hour) to 315360000000 "
                  "(3650 days). Empty: the default.",
    )

    class Meta:
        model = Room
        fields = ["name", "description", "message_expiration_ms", "delivery_delay_ms", "delivery_delay_multiplier",
                  "delivery_attempts", "max_delivery_delay_ms", "retention_ms", *BREAKER_FIELDS]
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in BREAKER_FIELDS:
            self.fields[name].widget.attrs["placeholder"] = str(getattr(self.instance, name))
        self.fields["retention_ms"].widget.attrs["placeholder"] = f"default: {settings.DOVECOTE_RETENTION * 1000}"

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        check_delay_cap(self, data.get("delivery_delay_ms"), data.get("max_delivery_delay_ms"))
        self.keep_unset_breaker_settings(data)
        return data


class EventTypeForm(forms.ModelForm):
    """A new event type of a room, with an optional JSON Schema for its payloads."""

    version = forms.CharField(max_length=50, initial="1")
    schema = OptionalJSONField(required=False, widget=forms.Textarea(attrs={"rows": 3, "class": "mono"}),
                             help_text="Optional JSON Schema (draft 2020-12) that payloads must satisfy.")

    class Meta:
        model = EventType
        fields = ["name", "version", "schema"]

    def __init__(self, *args: Any, room: Room, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.room = room

    def clean_schema(self) -> dict[str, Any] | None:
        schema = self.cleaned_data.get("schema")
        if schema is None:
            return None
        try:
            check_event_type_schema(schema)
        except SchemaRefused as refused:
            raise ValidationError(capfirst(str(refused))) from None
        return schema

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if problem := event_type_quota_problem(self.room):
            raise ValidationError(capfirst(problem) + ".")
        if self.room.has_event_type(data.get("name", ""), data.get("version", "")):
            self.add_error("name", f"This room already has {data.get('name')} version {data.get('version')}.")
        return data

    def save(self, commit: bool = True) -> EventType:
        self.instance.room = self.room
        return super().save(commit)
