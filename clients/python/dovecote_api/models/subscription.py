from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.breaker_on_disable_enum import BreakerOnDisableEnum, check_breaker_on_disable_enum
from ..models.ordering_enum import OrderingEnum, check_ordering_enum
from ..models.subscription_status_enum import SubscriptionStatusEnum, check_subscription_status_enum
from ..models.type_enum import TypeEnum, check_type_enum
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.breaker import Breaker
    from ..models.event_type_filter import EventTypeFilter
    from ..models.subscription_filter_type_0 import SubscriptionFilterType0


T = TypeVar("T", bound="Subscription")


@_attrs_define
class Subscription:
    """A subscription; `signing_secret` is in full only in the create and rotate-secret replies."""

    id: int
    room: int
    name: str
    type_: TypeEnum
    """ * `push` - Push
    * `pull` - Pull """
    throttled_until: datetime.datetime | None
    """ Push: a 429 or 503 with Retry-After pauses the whole subscription until this time. """
    status: SubscriptionStatusEnum
    """ * `active` - Active
    * `paused` - Paused
    * `disabled` - Disabled """
    status_reason: str
    destination: str
    """ The broker queue, `room-{r}::subscription-{s}`. """
    waiting: int
    """ Events stored for it and not yet delivered or pulled (pending, queued, retrying, or held behind their
    ordering key). A paused or disabled subscription keeps them until it is resumed, or until the room's expiration
    expires them. """
    signing_secret: None | str
    """ Push only: in full in the create and rotate-secret replies, else masked. """
    previous_secret_until: datetime.datetime | None
    """ Push only: after a rotation, until when the previous secret still signs each push (a second signature in
    `webhook-signature`); null when only the current secret signs. """
    breaker: Breaker
    """ A push subscription's circuit breaker now (docs/delivery-semantics.md#circuit-breaker). """
    last_error: str
    last_error_at: datetime.datetime | None
    created_at: datetime.datetime
    updated_at: datetime.datetime
    push_url: None | str | Unset = UNSET
    """ Required for push, refused for pull (null; an empty string means the same). Must be http(s) and reach a
    public address. """
    event_types: list[EventTypeFilter] | Unset = UNSET
    """ Empty: every event of the room. Each filter must name an event type the room has. """
    filter_: None | SubscriptionFilterType0 | Unset = UNSET
    """ A payload filter (Hookdeck/Outpost filter syntax; docs/delivery-semantics.md#payload-filters), applied at
    publish to `{"type", "version", "room", "correlation_id", "data": payload}`: an object shaped like that document
    (its top-level fields are those five) whose keys walk into it and whose leaves are a value to equal or an object
    of operators `$eq`, `$neq`, `$gt`, `$gte`, `$lt`, `$lte`, `$in`, `$startsWith`, `$exist`, combined with `$and`,
    `$or`, `$not`. Every key of an object must match. Only `$exist` is true of a missing field. At most 4096 bytes,
    64 fields and operators, 8 nested objects, 100 values in an `$in`. Null: no filter. A 400 names each fault by
    its JSON path in the filter (`$.data.total.$gte: …`). """
    ordering: OrderingEnum | Unset = UNSET
    """ * `off` - off
    * `on` - on
    * `park` - park """
    delivery_delay_ms: int | None | Unset = UNSET
    """ Null: the room's value. """
    delivery_delay_multiplier: float | None | Unset = UNSET
    """ Null: the room's value. """
    delivery_attempts: int | None | Unset = UNSET
    """ Null: the room's value. """
    max_delivery_delay_ms: int | None | Unset = UNSET
    """ Null: the room's value. """
    max_in_flight: int | Unset = UNSET
    timeout_ms: int | Unset = UNSET
    max_per_second: int | None | Unset = UNSET
    """ Push: POSTs per second at most, across every worker, beside `max_in_flight`; null: no limit. """
    breaker_failure_threshold: int | None | Unset = UNSET
    """ Consecutive failed attempts that open the breaker; 0: never on this rule. """
    breaker_failure_ratio: float | None | Unset = UNSET
    """ Failed share of the attempts in the window (at least 20 of them) that opens the breaker; 0: this rule never
    opens it. """
    breaker_window_s: int | None | Unset = UNSET
    """ The failure ratio's window, in seconds. """
    breaker_probe_delay_ms: int | None | Unset = UNSET
    """ The wait before the first probe of an open breaker; doubled after each failed probe, at most 10 minutes. """
    breaker_disable_after_s: int | None | Unset = UNSET
    """ A breaker open this long disables the subscription (default 5 days). """
    breaker_on_disable: BreakerOnDisableEnum | Unset = UNSET
    """ * `hold` - Hold
    * `dead_letter` - Dead Letter """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.subscription_filter_type_0 import SubscriptionFilterType0  # noqa: PLC0415

        id = self.id

        room = self.room

        name = self.name

        type_: str = self.type_

        throttled_until: None | str
        if isinstance(self.throttled_until, datetime.datetime):
            throttled_until = self.throttled_until.isoformat()
        else:
            throttled_until = self.throttled_until

        status: str = self.status

        status_reason = self.status_reason

        destination = self.destination

        waiting = self.waiting

        signing_secret: None | str
        signing_secret = self.signing_secret

        previous_secret_until: None | str
        if isinstance(self.previous_secret_until, datetime.datetime):
            previous_secret_until = self.previous_secret_until.isoformat()
        else:
            previous_secret_until = self.previous_secret_until

        breaker = self.breaker.to_dict()

        last_error = self.last_error

        last_error_at: None | str
        if isinstance(self.last_error_at, datetime.datetime):
            last_error_at = self.last_error_at.isoformat()
        else:
            last_error_at = self.last_error_at

        created_at = self.created_at.isoformat()

        updated_at = self.updated_at.isoformat()

        push_url: None | str | Unset
        if isinstance(self.push_url, Unset):
            push_url = UNSET
        else:
            push_url = self.push_url

        event_types: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.event_types, Unset):
            event_types = []
            for event_types_item_data in self.event_types:
                event_types_item = event_types_item_data.to_dict()
                event_types.append(event_types_item)

        filter_: dict[str, Any] | None | Unset
        if isinstance(self.filter_, Unset):
            filter_ = UNSET
        elif isinstance(self.filter_, SubscriptionFilterType0):
            filter_ = self.filter_.to_dict()
        else:
            filter_ = self.filter_

        ordering: str | Unset = UNSET
        if not isinstance(self.ordering, Unset):
            ordering = self.ordering

        delivery_delay_ms: int | None | Unset
        if isinstance(self.delivery_delay_ms, Unset):
            delivery_delay_ms = UNSET
        else:
            delivery_delay_ms = self.delivery_delay_ms

        delivery_delay_multiplier: float | None | Unset
        if isinstance(self.delivery_delay_multiplier, Unset):
            delivery_delay_multiplier = UNSET
        else:
            delivery_delay_multiplier = self.delivery_delay_multiplier

        delivery_attempts: int | None | Unset
        if isinstance(self.delivery_attempts, Unset):
            delivery_attempts = UNSET
        else:
            delivery_attempts = self.delivery_attempts

        max_delivery_delay_ms: int | None | Unset
        if isinstance(self.max_delivery_delay_ms, Unset):
            max_delivery_delay_ms = UNSET
        else:
            max_delivery_delay_ms = self.max_delivery_delay_ms

        max_in_flight = self.max_in_flight

        timeout_ms = self.timeout_ms

        max_per_second: int | None | Unset
        if isinstance(self.max_per_second, Unset):
            max_per_second = UNSET
        else:
            max_per_second = self.max_per_second

        breaker_failure_threshold: int | None | Unset
        if isinstance(self.breaker_failure_threshold, Unset):
            breaker_failure_threshold = UNSET
        else:
            breaker_failure_threshold = self.breaker_failure_threshold

        breaker_failure_ratio: float | None | Unset
        if isinstance(self.breaker_failure_ratio, Unset):
            breaker_failure_ratio = UNSET
        else:
            breaker_failure_ratio = self.breaker_failure_ratio

        breaker_window_s: int | None | Unset
        if isinstance(self.breaker_window_s, Unset):
            breaker_window_s = UNSET
        else:
            breaker_window_s = self.breaker_window_s

        breaker_probe_delay_ms: int | None | Unset
        if isinstance(self.breaker_probe_delay_ms, Unset):
            breaker_probe_delay_ms = UNSET
        else:
            breaker_probe_delay_ms = self.breaker_probe_delay_ms

        breaker_disable_after_s: int | None | Unset
        if isinstance(self.breaker_disable_after_s, Unset):
            breaker_disable_after_s = UNSET
        else:
            breaker_disable_after_s = self.breaker_disable_after_s

        breaker_on_disable: str | Unset = UNSET
        if not isinstance(self.breaker_on_disable, Unset):
            breaker_on_disable = self.breaker_on_disable

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "room": room,
                "name": name,
                "type": type_,
                "throttled_until": throttled_until,
                "status": status,
                "status_reason": status_reason,
                "destination": destination,
                "waiting": waiting,
                "signing_secret": signing_secret,
                "previous_secret_until": previous_secret_until,
                "breaker": breaker,
                "last_error": last_error,
                "last_error_at": last_error_at,
                "created_at": created_at,
                "updated_at": updated_at,
            }
        )
        if push_url is not UNSET:
            field_dict["push_url"] = push_url
        if event_types is not UNSET:
            field_dict["event_types"] = event_types
        if filter_ is not UNSET:
            field_dict["filter"] = filter_
        if ordering is not UNSET:
            field_dict["ordering"] = ordering
        if delivery_delay_ms is not UNSET:
            field_dict["delivery_delay_ms"] = delivery_delay_ms
        if delivery_delay_multiplier is not UNSET:
            field_dict["delivery_delay_multiplier"] = delivery_delay_multiplier
        if delivery_attempts is not UNSET:
            field_dict["delivery_attempts"] = delivery_attempts
        if max_delivery_delay_ms is not UNSET:
            field_dict["max_delivery_delay_ms"] = max_delivery_delay_ms
        if max_in_flight is not UNSET:
            field_dict["max_in_flight"] = max_in_flight
        if timeout_ms is not UNSET:
            field_dict["timeout_ms"] = timeout_ms
        if max_per_second is not UNSET:
            field_dict["max_per_second"] = max_per_second
        if breaker_failure_threshold is not UNSET:
            field_dict["breaker_failure_threshold"] = breaker_failure_threshold
        if breaker_failure_ratio is not UNSET:
            field_dict["breaker_failure_ratio"] = breaker_failure_ratio
        if breaker_window_s is not UNSET:
            field_dict["breaker_window_s"] = breaker_window_s
        if breaker_probe_delay_ms is not UNSET:
            field_dict["breaker_probe_delay_ms"] = breaker_probe_delay_ms
        if breaker_disable_after_s is not UNSET:
            field_dict["breaker_disable_after_s"] = breaker_disable_after_s
        if breaker_on_disable is not UNSET:
            field_dict["breaker_on_disable"] = breaker_on_disable

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.breaker import Breaker  # noqa: PLC0415
        from ..models.event_type_filter import EventTypeFilter  # noqa: PLC0415
        from ..models.subscription_filter_type_0 import SubscriptionFilterType0  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        room = d.pop("room")

        name = d.pop("name")

        type_ = check_type_enum(d.pop("type"))

        def _parse_throttled_until(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                throttled_until_type_0 = datetime.datetime.fromisoformat(data)

                return throttled_until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        throttled_until = _parse_throttled_until(d.pop("throttled_until"))

        status = check_subscription_status_enum(d.pop("status"))

        status_reason = d.pop("status_reason")

        destination = d.pop("destination")

        waiting = d.pop("waiting")

        def _parse_signing_secret(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        signing_secret = _parse_signing_secret(d.pop("signing_secret"))

        def _parse_previous_secret_until(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                previous_secret_until_type_0 = datetime.datetime.fromisoformat(data)

                return previous_secret_until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        previous_secret_until = _parse_previous_secret_until(d.pop("previous_secret_until"))

        breaker = Breaker.from_dict(d.pop("breaker"))

        last_error = d.pop("last_error")

        def _parse_last_error_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_error_at_type_0 = datetime.datetime.fromisoformat(data)

                return last_error_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        last_error_at = _parse_last_error_at(d.pop("last_error_at"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_push_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        push_url = _parse_push_url(d.pop("push_url", UNSET))

        _event_types = d.pop("event_types", UNSET)
        event_types: list[EventTypeFilter] | Unset = UNSET
        if _event_types is not UNSET:
            event_types = []
            for event_types_item_data in _event_types:
                event_types_item = EventTypeFilter.from_dict(event_types_item_data)

                event_types.append(event_types_item)

        def _parse_filter_(data: object) -> None | SubscriptionFilterType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                filter_type_0 = SubscriptionFilterType0.from_dict(data)

                return filter_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubscriptionFilterType0 | Unset, data)

        filter_ = _parse_filter_(d.pop("filter", UNSET))

        _ordering = d.pop("ordering", UNSET)
        ordering: OrderingEnum | Unset
        if isinstance(_ordering, Unset):
            ordering = UNSET
        else:
            ordering = check_ordering_enum(_ordering)

        def _parse_delivery_delay_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        delivery_delay_ms = _parse_delivery_delay_ms(d.pop("delivery_delay_ms", UNSET))

        def _parse_delivery_delay_multiplier(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        delivery_delay_multiplier = _parse_delivery_delay_multiplier(d.pop("delivery_delay_multiplier", UNSET))

        def _parse_delivery_attempts(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        delivery_attempts = _parse_delivery_attempts(d.pop("delivery_attempts", UNSET))

        def _parse_max_delivery_delay_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_delivery_delay_ms = _parse_max_delivery_delay_ms(d.pop("max_delivery_delay_ms", UNSET))

        max_in_flight = d.pop("max_in_flight", UNSET)

        timeout_ms = d.pop("timeout_ms", UNSET)

        def _parse_max_per_second(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_per_second = _parse_max_per_second(d.pop("max_per_second", UNSET))

        def _parse_breaker_failure_threshold(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        breaker_failure_threshold = _parse_breaker_failure_threshold(d.pop("breaker_failure_threshold", UNSET))

        def _parse_breaker_failure_ratio(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        breaker_failure_ratio = _parse_breaker_failure_ratio(d.pop("breaker_failure_ratio", UNSET))

        def _parse_breaker_window_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        breaker_window_s = _parse_breaker_window_s(d.pop("breaker_window_s", UNSET))

        def _parse_breaker_probe_delay_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        breaker_probe_delay_ms = _parse_breaker_probe_delay_ms(d.pop("breaker_probe_delay_ms", UNSET))

        def _parse_breaker_disable_after_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        breaker_disable_after_s = _parse_breaker_disable_after_s(d.pop("breaker_disable_after_s", UNSET))

        _breaker_on_disable = d.pop("breaker_on_disable", UNSET)
        breaker_on_disable: BreakerOnDisableEnum | Unset
        if isinstance(_breaker_on_disable, Unset):
            breaker_on_disable = UNSET
        else:
            breaker_on_disable = check_breaker_on_disable_enum(_breaker_on_disable)

        subscription = cls(
            id=id,
            room=room,
            name=name,
            type_=type_,
            throttled_until=throttled_until,
            status=status,
            status_reason=status_reason,
            destination=destination,
            waiting=waiting,
            signing_secret=signing_secret,
            previous_secret_until=previous_secret_until,
            breaker=breaker,
            last_error=last_error,
            last_error_at=last_error_at,
            created_at=created_at,
            updated_at=updated_at,
            push_url=push_url,
            event_types=event_types,
            filter_=filter_,
            ordering=ordering,
            delivery_delay_ms=delivery_delay_ms,
            delivery_delay_multiplier=delivery_delay_multiplier,
            delivery_attempts=delivery_attempts,
            max_delivery_delay_ms=max_delivery_delay_ms,
            max_in_flight=max_in_flight,
            timeout_ms=timeout_ms,
            max_per_second=max_per_second,
            breaker_failure_threshold=breaker_failure_threshold,
            breaker_failure_ratio=breaker_failure_ratio,
            breaker_window_s=breaker_window_s,
            breaker_probe_delay_ms=breaker_probe_delay_ms,
            breaker_disable_after_s=breaker_disable_after_s,
            breaker_on_disable=breaker_on_disable,
        )

        subscription.additional_properties = d
        return subscription

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
