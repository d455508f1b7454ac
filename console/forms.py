"""The console's forms: the rules of rooms/rules.py, subscriptions/rules.py, rooms/schemas.py, worded for operators."""

from __future__ import annotations

import json
import math
import uuid
from typing import Any, ClassVar

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.forms.fields import InvalidJSONInput, JSONString
from django.utils.text import capfirst

from delivery.models import Delivery
from dovecote.inputs import BadJson, parse_json, read_id
from rooms.models import ApiKey, EventType, Room
from rooms.rules import (
    MAX_ATTEMPTS,
    MAX_BREAKER_THRESHOLD,
    MAX_BREAKER_WINDOW_S,
    MAX_DELAY_MS,
    MAX_DISABLE_AFTER_S,
    MAX_MULTIPLIER,
    MAX_PROBE_DELAY_MS,
    MAX_RETENTION_MS,
    MAX_SPAN_MS,
    MIN_BREAKER_WINDOW_S,
    MIN_DISABLE_AFTER_S,
    MIN_PROBE_DELAY_MS,
    MIN_RETENTION_MS,
    cap_below_delay,
    event_type_quota_problem,
)
from rooms.schemas import SchemaRefused, check_event_type_schema
from subscriptions import filters
from subscriptions.models import Subscription
from subscriptions.retry import RetryPolicy
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


class OptionalJSONField(BoundedJSONField):
    """A JSON field that may be left empty: no value shows as an empty box, not as `null`."""

    def prepare_value(self, value: Any) -> Any:
        return "" if value is None else super().prepare_value(value)


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


class DateTimeLocalInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self) -> None:
        super().__init__(format="%Y-%m-%dT%H:%M")


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


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)

