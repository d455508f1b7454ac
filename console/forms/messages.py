"""The message log's filters, and its payloads shown as JSON."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django import forms

from console.forms.fields import DATETIME_FORMATS, DateTimeLocalInput, IdChoiceField
from delivery.models import Delivery
from rooms.models import Room
from subscriptions.models import Subscription


class MessageFilterForm(forms.Form):
    """Filters of the message log (GET); every field may be blank."""

    q = forms.CharField(required=False, max_length=200, label="Correlation or message id")
    room = IdChoiceField(queryset=Room.objects.only("id", "name"), required=False, empty_label="any room")
    subscription = IdChoiceField(
        queryset=Subscription.objects.select_related("room").only("id", "name", "room__name"),
        required=False, empty_label="any subscription",
    )
    status = forms.ChoiceField(choices=[("", "any status"), *Delivery.Status.choices], required=False)
    event_type = forms.CharField(required=False, max_length=200, label="Event type")
    since = forms.DateTimeField(required=False, input_formats=DATETIME_FORMATS, widget=DateTimeLocalInput(),
                                label="From (UTC)")
    until = forms.DateTimeField(required=False, input_formats=DATETIME_FORMATS, widget=DateTimeLocalInput(),
                                label="To (UTC)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["subscription"].label_from_instance = lambda s: f"{s.room.name} / {s.name}"

    def lookups(self) -> dict[str, Any]:
        """Return the ORM filters on Delivery for the valid, non-blank fields."""
        data = self.cleaned_data if self.is_valid() else {}
        fields = {"room": "message__room", "subscription": "subscription", "status": "status",
                  "event_type": "message__event_type", "since": "created_at__gte", "until": "created_at__lt"}
        return {lookup: data[name] for name, lookup in fields.items() if data.get(name) not in (None, "")}

    def search(self) -> tuple[str, uuid.UUID | None] | None:
        """Return the search text and, when it reads as one, the message id it names."""
        text = (self.cleaned_data.get("q") or "").strip() if self.is_valid() else ""
        if not text:
            return None
        try:
            return text, uuid.UUID(text)
        except ValueError:
            return text, None


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
