from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RoomRequest")


@_attrs_define
class RoomRequest:
    name: str
    description: str | Unset = UNSET
    message_expiration_ms: int | None | Unset = UNSET
    """ Messages not delivered within this many ms expire; null or 0: never. """
    delivery_delay_ms: int | Unset = UNSET
    """ d: the base of the redelivery delay. """
    delivery_delay_multiplier: float | Unset = UNSET
    """ m: redelivery k waits d × m^k ms. """
    delivery_attempts: int | Unset = UNSET
    """ Redeliveries after the first attempt; 0: none. """
    max_delivery_delay_ms: int | None | Unset = UNSET
    """ Cap on the redelivery delay, at least delivery_delay_ms; null: no cap. """
    retention_ms: int | None | Unset = UNSET
    """ How long settled messages stay in PostgreSQL before they move to the archive, in ms, 3600000 (1 hour) to
    315360000000 (3650 days); null: the default (DOVECOTE_RETENTION, 7 days unless set). """
    breaker_failure_threshold: int | Unset = UNSET
    """ Consecutive failed attempts that open the breaker; 0: never on this rule. """
    breaker_failure_ratio: float | Unset = UNSET
    """ Failed share of the attempts in the window (at least 20 of them) that opens the breaker; 0: this rule never
    opens it. """
    breaker_window_s: int | Unset = UNSET
    """ The failure ratio's window, in seconds. """
    breaker_probe_delay_ms: int | Unset = UNSET
    """ The wait before the first probe of an open breaker; doubled after each failed probe, at most 10 minutes. """
    breaker_disable_after_s: int | Unset = UNSET
    """ A breaker open this long disables the subscription (default 5 days). """

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        description = self.description

        message_expiration_ms: int | None | Unset
        if isinstance(self.message_expiration_ms, Unset):
            message_expiration_ms = UNSET
        else:
            message_expiration_ms = self.message_expiration_ms

        delivery_delay_ms = self.delivery_delay_ms

        delivery_delay_multiplier = self.delivery_delay_multiplier

        delivery_attempts = self.delivery_attempts

        max_delivery_delay_ms: int | None | Unset
        if isinstance(self.max_delivery_delay_ms, Unset):
            max_delivery_delay_ms = UNSET
        else:
            max_delivery_delay_ms = self.max_delivery_delay_ms

        retention_ms: int | None | Unset
        if isinstance(self.retention_ms, Unset):
            retention_ms = UNSET
        else:
            retention_ms = self.retention_ms

        breaker_failure_threshold = self.breaker_failure_threshold

        breaker_failure_ratio = self.breaker_failure_ratio

        breaker_window_s = self.breaker_window_s

        breaker_probe_delay_ms = self.breaker_probe_delay_ms

        breaker_disable_after_s = self.breaker_disable_after_s

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if description is not UNSET:
            field_dict["description"] = description
        if message_expiration_ms is not UNSET:
            field_dict["message_expiration_ms"] = message_expiration_ms
        if delivery_delay_ms is not UNSET:
            field_dict["delivery_delay_ms"] = delivery_delay_ms
        if delivery_delay_multiplier is not UNSET:
            field_dict["delivery_delay_multiplier"] = delivery_delay_multiplier
        if delivery_attempts is not UNSET:
            field_dict["delivery_attempts"] = delivery_attempts
        if max_delivery_delay_ms is not UNSET:
            field_dict["max_delivery_delay_ms"] = max_delivery_delay_ms
        if retention_ms is not UNSET:
            field_dict["retention_ms"] = retention_ms
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

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        description = d.pop("description", UNSET)

        def _parse_message_expiration_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        message_expiration_ms = _parse_message_expiration_ms(d.pop("message_expiration_ms", UNSET))

        delivery_delay_ms = d.pop("delivery_delay_ms", UNSET)

        delivery_delay_multiplier = d.pop("delivery_delay_multiplier", UNSET)

        delivery_attempts = d.pop("delivery_attempts", UNSET)

        def _parse_max_delivery_delay_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_delivery_delay_ms = _parse_max_delivery_delay_ms(d.pop("max_delivery_delay_ms", UNSET))

        def _parse_retention_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        retention_ms = _parse_retention_ms(d.pop("retention_ms", UNSET))

        breaker_failure_threshold = d.pop("breaker_failure_threshold", UNSET)

        breaker_failure_ratio = d.pop("breaker_failure_ratio", UNSET)

        breaker_window_s = d.pop("breaker_window_s", UNSET)

        breaker_probe_delay_ms = d.pop("breaker_probe_delay_ms", UNSET)

        breaker_disable_after_s = d.pop("breaker_disable_after_s", UNSET)

        room_request = cls(
            name=name,
            description=description,
            message_expiration_ms=message_expiration_ms,
            delivery_delay_ms=delivery_delay_ms,
            delivery_delay_multiplier=delivery_delay_multiplier,
            delivery_attempts=delivery_attempts,
            max_delivery_delay_ms=max_delivery_delay_ms,
            retention_ms=retention_ms,
            breaker_failure_threshold=breaker_failure_threshold,
            breaker_failure_ratio=breaker_failure_ratio,
            breaker_window_s=breaker_window_s,
            breaker_probe_delay_ms=breaker_probe_delay_ms,
            breaker_disable_after_s=breaker_disable_after_s,
        )

        return room_request
