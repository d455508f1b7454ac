from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="PulledMessage")


@_attrs_define
class PulledMessage:
    ack_id: str
    message_id: UUID
    correlation_id: str
    event_type: str
    event_version: str
    payload: Any
    attempt: int
    lease_expires_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        ack_id = self.ack_id

        message_id = str(self.message_id)

        correlation_id = self.correlation_id

        event_type = self.event_type

        event_version = self.event_version

        payload = self.payload

        attempt = self.attempt

        lease_expires_at = self.lease_expires_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "ack_id": ack_id,
                "message_id": message_id,
                "correlation_id": correlation_id,
                "event_type": event_type,
                "event_version": event_version,
                "payload": payload,
                "attempt": attempt,
                "lease_expires_at": lease_expires_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        ack_id = d.pop("ack_id")

        message_id = UUID(d.pop("message_id"))

        correlation_id = d.pop("correlation_id")

        event_type = d.pop("event_type")

        event_version = d.pop("event_version")

        payload = d.pop("payload")

        attempt = d.pop("attempt")

        lease_expires_at = datetime.datetime.fromisoformat(d.pop("lease_expires_at"))

        pulled_message = cls(
            ack_id=ack_id,
            message_id=message_id,
            correlation_id=correlation_id,
            event_type=event_type,
            event_version=event_version,
            payload=payload,
            attempt=attempt,
            lease_expires_at=lease_expires_at,
        )

        pulled_message.additional_properties = d
        return pulled_message

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
