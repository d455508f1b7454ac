from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.breaker_state_enum import BreakerStateEnum, check_breaker_state_enum

T = TypeVar("T", bound="BreakerTransition")


@_attrs_define
class BreakerTransition:
    at: datetime.datetime
    from_state: BreakerStateEnum
    """ * `closed` - Closed
    * `open` - Open
    * `half_open` - Half Open """
    to_state: BreakerStateEnum
    """ * `closed` - Closed
    * `open` - Open
    * `half_open` - Half Open """
    reason: str
    delivery_id: int | None
    """ The delivery whose attempt caused it, if one did. """
    attempt: int | None
    """ That attempt's number. """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        from_state: str = self.from_state

        to_state: str = self.to_state

        reason = self.reason

        delivery_id: int | None
        delivery_id = self.delivery_id

        attempt: int | None
        attempt = self.attempt

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "from_state": from_state,
                "to_state": to_state,
                "reason": reason,
                "delivery_id": delivery_id,
                "attempt": attempt,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = datetime.datetime.fromisoformat(d.pop("at"))

        from_state = check_breaker_state_enum(d.pop("from_state"))

        to_state = check_breaker_state_enum(d.pop("to_state"))

        reason = d.pop("reason")

        def _parse_delivery_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        delivery_id = _parse_delivery_id(d.pop("delivery_id"))

        def _parse_attempt(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        attempt = _parse_attempt(d.pop("attempt"))

        breaker_transition = cls(
            at=at,
            from_state=from_state,
            to_state=to_state,
            reason=reason,
            delivery_id=delivery_id,
            attempt=attempt,
        )

        breaker_transition.additional_properties = d
        return breaker_transition

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
