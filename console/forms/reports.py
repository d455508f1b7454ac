"""The Reports page's filters."""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError

from console.forms.fields import IdChoiceField
from rooms.models import Room
from subscriptions.models import Subscription


class ReportFilterForm(forms.Form):
    """Filters of the Reports page (GET): a room or one subscription, and how many hours up to the newest report."""

    WINDOWS: ClassVar[dict[str, tuple[str, int]]] = {
        "24h": ("last 24 hours", 24), "7d": ("last 7 days", 7 * 24), "30d": ("last 30 days", 30 * 24)}
    DEFAULT_WINDOW = "7d"

    room = IdChoiceField(queryset=Room.objects.only("id", "name").order_by("name"), required=False,
                         empty_label="all rooms")
    subscription = IdChoiceField(
        queryset=Subscription.objects.select_related("room").only("id", "name", "room__name")
        .order_by("room__name", "name"), required=False, empty_label="every subscription",
    )
    window = forms.ChoiceField(choices=[(key, label) for key, (label, _) in WINDOWS.items()], label="Window")

    def __init__(self, data: Any, **kwargs: Any) -> None:
        if not data.get("window"):  # the default shows as selected, not only as applied
            data = data.copy()
            data["window"] = self.DEFAULT_WINDOW
        super().__init__(data, **kwargs)
        self.fields["subscription"].label_from_instance = lambda s: f"{s.room.name} / {s.name}"

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        room, subscription = data.get("room"), data.get("subscription")
        if room and subscription and subscription.room_id != room.pk:
            raise ValidationError(f"Subscription {subscription.name} is not in room {room.name}: "
                                  f"choose one of the room's subscriptions, or every subscription.")
        return data

    def lookups(self) -> dict[str, int]:
        """Return the report-row filters of the valid form: a subscription's, a room's, or none (all rooms)."""
        if subscription := self.cleaned_data.get("subscription"):
            return {"room_id": subscription.room_id, "subscription_id": subscription.pk}
        room = self.cleaned_data.get("room")
        return {"room_id": room.pk} if room else {}

    @property
    def hours(self) -> int:
        return self.WINDOWS[self.cleaned_data["window"]][1]

    def described(self) -> str:
        """Name the selection: "all rooms", "room orders" or "subscription orders / billing"."""
        if subscription := self.cleaned_data.get("subscription"):
            return f"subscription {subscription.room.name} / {subscription.name}"
        room = self.cleaned_data.get("room")
        return f"room {room.name}" if room else "all rooms"
