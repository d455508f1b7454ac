from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.breaker_state_enum import BreakerStateEnum, check_breaker_state_enum

T = TypeVar("T", bound="BreakerRequest")


@_attrs_define
class BreakerRequest:
    """A push subscription's circuit breaker now (docs/delivery-semantics.md#circuit-breaker)."""

    state: BreakerStateEnum
    """ * `closed` - Closed
    * `open` - Open
    * `half_open` - Half Open """
    reason: str
    """ Why it is in this state: its last transition's reason. """
    consecutive_failures: int
    opened_at: datetime.datetime | None
    """ When the current outage opened it; null when closed. """
    failed_probes: int
    """ Failed probes since it opened. """
    next_probe_at: datetime.datetime | None
    """ When open: the time of the next probe. """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        state: str = self.state

        reason = self.reason

        consecutive_failures = self.consecutive_failures

        opened_at: None | str
        if isinstance(self.opened_at, datetime.datetime):
            opened_at = self.opened_at.isoformat()
        else:
            opened_at = self.opened_at

        failed_probes = self.failed_probes

        next_probe_at: None | str
        if isinstance(self.next_probe_at, datetime.datetime):
            next_probe_at = self.next_probe_at.isoformat()
        else:
            next_probe_at = self.next_probe_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "state": state,
                "reason": reason,
                "consecutive_failures": consecutive_failures,
                "opened_at": opened_at,
                "failed_probes": failed_probes,
                "next_probe_at": next_probe_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        state = check_breaker_state_enum(d.pop("state"))

        reason = d.pop("reason")

        consecutive_failures = d.pop("consecutive_failures")

        def _parse_opened_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                opened_at_type_0 = datetime.datetime.fromisoformat(data)

                return opened_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        opened_at = _parse_opened_at(d.pop("opened_at"))

        failed_probes = d.pop("failed_probes")

        def _parse_next_probe_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_probe_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_probe_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        next_probe_at = _parse_next_probe_at(d.pop("next_probe_at"))

        breaker_request = cls(
            state=state,
            reason=reason,
            consecutive_failures=consecutive_failures,
            opened_at=opened_at,
            failed_probes=failed_probes,
            next_probe_at=next_probe_at,
        )

        breaker_request.additional_properties = d
        return breaker_request

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
