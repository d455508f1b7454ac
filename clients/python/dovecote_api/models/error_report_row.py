from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ErrorReportRow")


@_attrs_define
class ErrorReportRow:
    hour: datetime.datetime
    room: int
    subscription: int | None
    outcome: str
    failed_attempts: int
    status_code: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        hour = self.hour.isoformat()

        room = self.room

        subscription: int | None
        subscription = self.subscription

        outcome = self.outcome

        failed_attempts = self.failed_attempts

        status_code: int | None | Unset
        if isinstance(self.status_code, Unset):
            status_code = UNSET
        else:
            status_code = self.status_code

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "hour": hour,
                "room": room,
                "subscription": subscription,
                "outcome": outcome,
                "failed_attempts": failed_attempts,
            }
        )
        if status_code is not UNSET:
            field_dict["status_code"] = status_code

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        hour = datetime.datetime.fromisoformat(d.pop("hour"))

        room = d.pop("room")

        def _parse_subscription(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        subscription = _parse_subscription(d.pop("subscription"))

        outcome = d.pop("outcome")

        failed_attempts = d.pop("failed_attempts")

        def _parse_status_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        status_code = _parse_status_code(d.pop("status_code", UNSET))

        error_report_row = cls(
            hour=hour,
            room=room,
            subscription=subscription,
            outcome=outcome,
            failed_attempts=failed_attempts,
            status_code=status_code,
        )

        error_report_row.additional_properties = d
        return error_report_row

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
