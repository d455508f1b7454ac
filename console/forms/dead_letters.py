"""The dead-letters page's forms: the filters, and replay or purge."""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from console.forms.fields import DATETIME_FORMATS, DateTimeLocalInput


class DeadLetterFilterForm(forms.Form):
    since = forms.DateTimeField(required=False, input_formats=DATETIME_FORMATS, widget=DateTimeLocalInput(),
                                label="Dead-lettered from (UTC)")
    until = forms.DateTimeField(required=False, input_formats=DATETIME_FORMATS, widget=DateTimeLocalInput(),
                                label="To (UTC)")
    error = forms.CharField(required=False, max_length=200, label="Error contains")

    def filters(self) -> dict[str, Any]:
        data = self.cleaned_data if self.is_valid() else {}
        return {name: data[name] for name in ("since", "until", "error") if data.get(name)}


class DeadLetterActionForm(forms.Form):
    """Replay or purge: the chosen message ids, or every dead letter of the subscription."""

    choice = forms.ChoiceField(choices=[
        ("replay:selected", "Replay selected"), ("purge:selected", "Purge selected"),
        ("replay:all", "Replay all"), ("purge:all", "Purge all"),
    ])
    message_ids = forms.TypedMultipleChoiceField(coerce=uuid.UUID, required=False)
    confirmed = forms.BooleanField(required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Any well-formed id is a valid choice: replay() and purge() ignore ids that are not dead letters.
        self.fields["message_ids"].valid_value = is_uuid

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("choice", "").endswith(":selected") and not data.get("message_ids"):
            raise ValidationError("Select at least one dead letter, or choose all of them.")
        return data

    @property
    def action(self) -> str:
        return self.cleaned_data["choice"].partition(":")[0]

    @property
    def scope(self) -> str:
        return self.cleaned_data["choice"].partition(":")[2]

    def chosen_ids(self) -> list[uuid.UUID] | None:
        """Return the chosen message ids, or None for all of the subscription's dead letters."""
        return None if self.scope == "all" else self.cleaned_data["message_ids"]


def is_uuid(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
