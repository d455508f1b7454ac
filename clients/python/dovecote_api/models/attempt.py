from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.outcome_enum import OutcomeEnum, check_outcome_enum
from ..types import UNSET, Unset

T = TypeVar("T", bound="Attempt")


@_attrs_define
class Attempt:
    attempt: int
    outcome: OutcomeEnum
    """ * `success` - Success
    * `failure` - Failure
    * `timeout` - Timeout
    * `connection_error` - connection error
    * `lease_expired` - lease expired
    * `nacked` - Nacked
    * `crashed` - worker crashed """
    life: int | Unset = UNSET
    """ 1, then one more after each replay. """
    started_at: datetime.datetime | Unset = UNSET
    duration_ms: int | Unset = UNSET
    status_code: int | None | Unset = UNSET
    error: str | Unset = UNSET
    next_delay_ms: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        outcome: str = self.outcome

        life = self.life

        started_at: str | Unset = UNSET
        if not isinstance(self.started_at, Unset):
            started_at = self.started_at.isoformat()

        duration_ms = self.duration_ms

        status_code: int | None | Unset
        if isinstance(self.status_code, Unset):
            status_code = UNSET
        else:
            status_code = self.status_code

        error = self.error

        next_delay_ms: int | None | Unset
        if isinstance(self.next_delay_ms, Unset):
            next_delay_ms = UNSET
        else:
            next_delay_ms = self.next_delay_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "outcome": outcome,
            }
        )
        if life is not UNSET:
            field_dict["life"] = life
        if started_at is not UNSET:
            field_dict["started_at"] = started_at
        if duration_ms is not UNSET:
            field_dict["duration_ms"] = duration_ms
        if status_code is not UNSET:
            field_dict["status_code"] = status_code
        if error is not UNSET:
            field_dict["error"] = error
        if next_delay_ms is not UNSET:
            field_dict["next_delay_ms"] = next_delay_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        outcome = check_outcome_enum(d.pop("outcome"))

        life = d.pop("life", UNSET)

        _started_at = d.pop("started_at", UNSET)
        started_at: datetime.datetime | Unset
        if isinstance(_started_at, Unset):
            started_at = UNSET
        else:
            started_at = datetime.datetime.fromisoformat(_started_at)

        duration_ms = d.pop("duration_ms", UNSET)

        def _parse_status_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        status_code = _parse_status_code(d.pop("status_code", UNSET))

        error = d.pop("error", UNSET)

        def _parse_next_delay_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        next_delay_ms = _parse_next_delay_ms(d.pop("next_delay_ms", UNSET))

        attempt = cls(
            attempt=attempt,
            outcome=outcome,
            life=life,
            started_at=started_at,
            duration_ms=duration_ms,
            status_code=status_code,
            error=error,
            next_delay_ms=next_delay_ms,
        )

        attempt.additional_properties = d
        return attempt

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
