"""The API keys page's form: a new key."""

from __future__ import annotations

from typing import Any

from django import forms

from console.forms.fields import IdMultipleChoiceField
from rooms.models import ApiKey, Room


class ApiKeyForm(forms.Form):
    """A new API key: an admin key, or one scoped to some rooms."""

    name = forms.CharField(max_length=200)
    is_admin = forms.BooleanField(required=False, label="Admin key (every room, and room management)")
    rooms = IdMultipleChoiceField(queryset=Room.objects.all(), required=False,
                                           widget=forms.CheckboxSelectMultiple)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not data.get("is_admin") and not data.get("rooms"):
            self.add_error("rooms", "Choose at least one room, or make it an admin key.")
        if data.get("is_admin"):
            data["rooms"] = []
        return data

    def issue(self) -> tuple[ApiKey, str]:
        data = self.cleaned_data
        return ApiKey.issue(data["name"], rooms=list(data["rooms"]), is_admin=data["is_admin"])
