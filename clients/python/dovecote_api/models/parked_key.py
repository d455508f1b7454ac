from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ParkedKey")


@_attrs_define
class ParkedKey:
    ordering_key: str
    message_id: UUID
    """ The dead letter that parks it. """
    correlation_id: str
    dead_lettered_at: datetime.datetime
    waiting: int
    """ Events of the key held behind it. """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        ordering_key = self.ordering_key

        message_id = str(self.message_id)

        correlation_id = self.correlation_id

        dead_lettered_at = self.dead_lettered_at.isoformat()

        waiting = self.waiting

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "ordering_key": ordering_key,
                "message_id": message_id,
                "correlation_id": correlation_id,
                "dead_lettered_at": dead_lettered_at,
                "waiting": waiting,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        ordering_key = d.pop("ordering_key")

        message_id = UUID(d.pop("message_id"))

        correlation_id = d.pop("correlation_id")

        dead_lettered_at = datetime.datetime.fromisoformat(d.pop("dead_lettered_at"))

        waiting = d.pop("waiting")

        parked_key = cls(
            ordering_key=ordering_key,
            message_id=message_id,
            correlation_id=correlation_id,
            dead_lettered_at=dead_lettered_at,
            waiting=waiting,
        )

        parked_key.additional_properties = d
        return parked_key

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
