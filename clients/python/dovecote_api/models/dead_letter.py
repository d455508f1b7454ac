from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="DeadLetter")


@_attrs_define
class DeadLetter:
    message_id: UUID
    correlation_id: str
    event_type: str
    event_version: str
    dead_lettered_at: datetime.datetime
    attempts: int | Unset = UNSET
    """ Attempts started so far. """
    replays: int | Unset = UNSET
    last_status_code: int | None | Unset = UNSET
    last_error: str | Unset = UNSET
    created_at: datetime.datetime | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        message_id = str(self.message_id)

        correlation_id = self.correlation_id

        event_type = self.event_type

        event_version = self.event_version

        dead_lettered_at = self.dead_lettered_at.isoformat()

        attempts = self.attempts

        replays = self.replays

        last_status_code: int | None | Unset
        if isinstance(self.last_status_code, Unset):
            last_status_code = UNSET
        else:
            last_status_code = self.last_status_code

        last_error = self.last_error

        created_at: str | Unset = UNSET
        if not isinstance(self.created_at, Unset):
            created_at = self.created_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "message_id": message_id,
                "correlation_id": correlation_id,
                "event_type": event_type,
                "event_version": event_version,
                "dead_lettered_at": dead_lettered_at,
            }
        )
        if attempts is not UNSET:
            field_dict["attempts"] = attempts
        if replays is not UNSET:
            field_dict["replays"] = replays
        if last_status_code is not UNSET:
            field_dict["last_status_code"] = last_status_code
        if last_error is not UNSET:
            field_dict["last_error"] = last_error
        if created_at is not UNSET:
            field_dict["created_at"] = created_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        message_id = UUID(d.pop("message_id"))

        correlation_id = d.pop("correlation_id")

        event_type = d.pop("event_type")

        event_version = d.pop("event_version")

        dead_lettered_at = datetime.datetime.fromisoformat(d.pop("dead_lettered_at"))

        attempts = d.pop("attempts", UNSET)

        replays = d.pop("replays", UNSET)

        def _parse_last_status_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        last_status_code = _parse_last_status_code(d.pop("last_status_code", UNSET))

        last_error = d.pop("last_error", UNSET)

        _created_at = d.pop("created_at", UNSET)
        created_at: datetime.datetime | Unset
        if isinstance(_created_at, Unset):
            created_at = UNSET
        else:
            created_at = datetime.datetime.fromisoformat(_created_at)

        dead_letter = cls(
            message_id=message_id,
            correlation_id=correlation_id,
            event_type=event_type,
            event_version=event_version,
            dead_lettered_at=dead_lettered_at,
            attempts=attempts,
            replays=replays,
            last_status_code=last_status_code,
            last_error=last_error,
            created_at=created_at,
        )

        dead_letter.additional_properties = d
        return dead_letter

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
