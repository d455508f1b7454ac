"""The Subscriptions page's forms: a subscription, its live filter check, a test event, a secret rotation."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.text import capfirst

from console.forms.fields import (
    BREAKER_FIELDS,
    BoundedJSONField,
    BreakerFields,
    OptionalJSONField,
    attempts_field,
    cap_field,
    check_delay_cap,
    delay_field,
    multiplier_field,
)
from rooms.models import Room
from subscriptions import filters
from subscriptions.models import Subscription
from subscriptions.rules import (
    MAX_IN_FLIGHT,
    MAX_PER_SECOND,
    MAX_SECRET_OVERLAP_SECONDS,
    MAX_TIMEOUT_MS,
    MIN_TIMEOUT_MS,
    PushUrlProblem,
    PushUrlRefused,
    check_push_url_of,
    in_flight_seconds_problem,
    name_taken,
    quota_problem,
)


def filter_value(event_filter: dict[str, Any]) -> str:
    """Encode one event-type filter as a checkbox value: `name` (any version) or `name@version`."""
    return f"{event_filter['name']}@{event_filter['version']}" if event_filter.get("version") else event_filter["name"]


def filter_from_value(value: str) -> dict[str, str]:
    name, _, version = value.partition("@")
    return {"name": name, "version": version} if version else {"name": name}


# What the console says for each push-URL rule (subscriptions/rules.py).
PUSH_URL_MESSAGES = {PushUrlProblem.MISSING: "A push subscription needs a push URL.",
                     PushUrlProblem.NOT_TAKEN: "A pull subscription takes no push URL."}


class SubscriptionForm(BreakerFields, forms.ModelForm):
    """A push or pull subscription of a room: its filter and the overrides of the room's settings."""

    event_types = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Event types",
        help_text="None ticked: every event of the room.",
    )
    payload_filter = OptionalJSONField(
        required=False, label="Filter (JSON)",
        widget=forms.Textarea(attrs={"rows": 5, "class": "mono",
                                     "placeholder": '{"data": {"total": {"$gte": 100}}}'}),
        help_text="Empty: every event of the ticked types. JSON in Hookdeck's filter syntax over "
                  '{"type", "version", "room", "correlation_id", "data": payload}.',
    )
    delivery_delay_ms = delay_field(required=False)
    delivery_delay_multiplier = multiplier_field(required=False)
    delivery_attempts = attempts_field(required=False)
    max_delivery_delay_ms = cap_field()
    max_in_flight = forms.IntegerField(min_value=1, max_value=MAX_IN_FLIGHT, initial=10, label="Max in flight",
                                       help_text="Push: concurrent POSTs.")
    timeout_ms = forms.IntegerField(min_value=MIN_TIMEOUT_MS, max_value=MAX_TIMEOUT_MS, initial=10_000,
                                    label="Timeout (ms)", help_text="Push: each POST's time limit.")
    max_per_second = forms.IntegerField(
        min_value=1, max_value=MAX_PER_SECOND, required=False, label="Max per second",
        help_text="Push: POSTs per second, across every worker; empty: no limit.")
    breaker_on_disable = forms.ChoiceField(
        choices=Subscription.OnDisable.choices, required=False,
        label="When the breaker disables it, what is on its way is",
        help_text="hold: kept for a resume; dead_letter: dead-lettered with the reason (replayable).")

    class Meta:
        model = Subscription
        fields = ["name", "type", "push_url", "event_types", "payload_filter", "ordering", "delivery_delay_ms",
                  "delivery_delay_multiplier", "delivery_attempts", "max_delivery_delay_ms", "max_in_flight",
                  "timeout_ms", "max_per_second", "breaker_failure_threshold", "breaker_failure_ratio",
                  "breaker_window_s", "breaker_probe_delay_ms", "breaker_disable_after_s", "breaker_on_disable"]
        widgets = {"type": forms.RadioSelect, "push_url": forms.URLInput(attrs={"placeholder": "https://…"})}
        labels = {"push_url": "Push URL", "ordering": "Ordering by ordering key"}
        help_texts = {"ordering": "On: the events of one ordering key one at a time, in publish order; a failing "
                                  "event holds only its own key."}

    def __init__(self, *args: Any, room: Room, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.room = room
        self.fields["event_types"].choices = self.filter_choices()
        self.fields["type"].choices = Subscription.Type.choices  # no blank choice among the radios
        self.fields["ordering"].required = False  # not given: as it was (off for a new subscription)
        if self.instance.pk:
            self.fields["type"].disabled = True
            self.initial["event_types"] = [filter_value(f) for f in self.instance.event_types]
        placeholders = {"delivery_delay_ms": room.delivery_delay_ms,
                        "delivery_delay_multiplier": room.delivery_delay_multiplier,
                        "delivery_attempts": room.delivery_attempts,
                        "max_delivery_delay_ms": room.max_delivery_delay_ms,
                        **{name: getattr(room, name) for name in BREAKER_FIELDS}}
        for name, value in placeholders.items():
            shown = "no cap" if value is None else value
            self.fields[name].widget.attrs["placeholder"] = f"room: {shown}"

    def filter_choices(self) -> list[tuple[str, str]]:
        """Offer each event name (any version) and each name and version; keep filters naming gone types."""
        known = list(self.room.event_types.values_list("name", "version"))
        choices: dict[str, str] = {}
        for name, version in known:
            choices.setdefault(name, f"{name} (any version)")
            choices[f"{name}@{version}"] = f"{name} v{version}"
        for event_filter in self.instance.event_types or []:
            choices.setdefault(filter_value(event_filter), f"{filter_value(event_filter)} (no such event type)")
        return list(choices.items())

    def clean_event_types(self) -> list[dict[str, str]]:
        return [filter_from_value(value) for value in self.cleaned_data.get("event_types", [])]

    def clean_ordering(self) -> str:
        return self.cleaned_data.get("ordering") or self.instance.ordering or Subscription.Ordering.OFF

    def clean_payload_filter(self) -> Any:
        spec = self.cleaned_data.get("payload_filter")
        if problems := filters.filter_problems(spec):
            raise ValidationError(problems)
        return spec

    def clean_breaker_on_disable(self) -> str:
        """Not given (a form of an older page): keep the subscription's choice."""
        return self.cleaned_data.get("breaker_on_disable") or self.instance.breaker_on_disable

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if name_taken(self.room, name, excluding=self.instance.pk):
            raise ValidationError(f"This room already has a subscription named {name!r}.")
        return name

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not self.instance.pk and (problem := quota_problem(self.room)):
            raise ValidationError(capfirst(problem) + ".")
        kind, url = data.get("type", ""), data.get("push_url") or ""
        data["push_url"] = url
        try:
            check_push_url_of(kind, url)
        except PushUrlRefused as refused:
            # A URL the URL field refused already has its error; the console words the rest for operators.
            if refused.problem != PushUrlProblem.MISSING or "push_url" not in self.errors:
                self.add_error("push_url", PUSH_URL_MESSAGES.get(refused.problem, f"Refused: {refused.reason}."))
        check_delay_cap(self, data.get("delivery_delay_ms"), data.get("max_delivery_delay_ms"))
        if problem := in_flight_seconds_problem(kind, data.get("max_in_flight"), data.get("timeout_ms")):
            self.add_error("max_in_flight", capfirst(problem) + ".")
            self.add_error("timeout_ms", capfirst(problem) + ".")
        return data

    def save(self, commit: bool = True) -> Subscription:
        self.instance.room = self.room
        return super().save(commit)


class FilterCheckForm(forms.Form):
    """The subscription form's payload filter with a sample event to try it on (the live check)."""

    payload_filter = OptionalJSONField(required=False)
    sample_payload = OptionalJSONField(
        required=False, label="Sample payload",
        widget=forms.Textarea(attrs={"rows": 4, "class": "mono", "placeholder": '{"total": 120}'}),
        help_text="Would an event with this payload, of the first ticked event type, match?",
    )
    event_types = forms.MultipleChoiceField(required=False)

    def __init__(self, *args: Any, room: Room, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.room = room
        self.fields["event_types"].choices = [(v, v) for v in self.data.getlist("event_types")] if self.data else []

    def verdict(self) -> tuple[str, list[str]]:
        """Say whether the sample matches: ("match" | "no-match" | "invalid" | "empty", and the reasons)."""
        if not self.is_valid():
            return "invalid", [f"{self.fields[name].label or name}: {error}" for name, errors in self.errors.items()
                               for error in errors]
        spec, payload = self.cleaned_data["payload_filter"], self.cleaned_data["sample_payload"]
        if problems := filters.filter_problems(spec):
            return "invalid", problems
        if payload is None:
            return "empty", []
        name, version = self.sample_type()
        document = filters.event_document(name, version, self.room.name, "sample", payload)
        if filters.matches(spec, document):
            return "match", [f"as {name} v{version}"]
        return "no-match", [f"as {name} v{version}", *filters.sample_near_misses(spec, document)]

    def sample_type(self) -> tuple[str, str]:
        """The first ticked event type (its newest version when any version is ticked), else the room's first."""
        ticked = [filter_from_value(v) for v in self.cleaned_data["event_types"]]
        known = list(self.room.event_types.order_by("name", "-version").values_list("name", "version"))
        for wanted in ticked:
            for name, version in known:
                if name == wanted["name"] and wanted.get("version") in (None, version):
                    return name, version
        return known[0] if known else ("", "")


class PayloadField(BoundedJSONField):
    """An event's payload: any JSON value, `{}` and `[]` included (only an empty box is missing)."""

    empty_values = [None, ""]


class TestEventForm(forms.Form):
    """What a test event carries besides its event type."""

    payload = PayloadField(initial={"test": True}, widget=forms.Textarea(attrs={"rows": 3, "class": "mono"}))
    correlation_id = forms.CharField(max_length=200, required=False, label="Correlation id",
                                     help_text="Empty: a new UUID.")


class RotateSecretForm(forms.Form):
    """How long the old signing secret keeps signing beside the new one."""

    overlap_hours = forms.IntegerField(
        min_value=0, max_value=MAX_SECRET_OVERLAP_SECONDS // 3600, required=False,
        label="Keep the old secret signing for (hours)",
        help_text="Each push carries both signatures meanwhile, so the receiver accepts it with either secret. "
                  "0: the old secret stops at once; empty: the default overlap.")
