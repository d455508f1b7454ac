from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.destination_detail import DestinationDetail


T = TypeVar("T", bound="MessageDetail")


@_attrs_define
class MessageDetail:
    message_id: UUID
    correlation_id: str
    room: int
    event_type: str
    event_version: str
    payload: Any
    destinations: list[DestinationDetail]
    idempotency_key: None | str | Unset = UNSET
    ordering_key: str | Unset = UNSET
    created_at: datetime.datetime | Unset = UNSET
    expires_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        message_id = str(self.message_id)

        correlation_id = self.correlation_id

        room = self.room

        event_type = self.event_type

        event_version = self.event_version

        payload = self.payload

        destinations = []
        for destinations_item_data in self.destinations:
            destinations_item = destinations_item_data.to_dict()
            destinations.append(destinations_item)

        idempotency_key: None | str | Unset
        if isinstance(self.idempotency_key, Unset):
            idempotency_key = UNSET
        else:
            idempotency_key = self.idempotency_key

        ordering_key = self.ordering_key

        created_at: str | Unset = UNSET
        if not isinstance(self.created_at, Unset):
            created_at = self.created_at.isoformat()

        expires_at: None | str | Unset
        if isinstance(self.expires_at, Unset):
            expires_at = UNSET
        elif isinstance(self.expires_at, datetime.datetime):
            expires_at = self.expires_at.isoformat()
        else:
            expires_at = self.expires_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "message_id": message_id,
                "correlation_id": correlation_id,
                "room": room,
                "event_type": event_type,
                "event_version": event_version,
                "payload": payload,
                "destinations": destinations,
            }
        )
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if ordering_key is not UNSET:
            field_dict["ordering_key"] = ordering_key
        if created_at is not UNSET:
            field_dict["created_at"] = created_at
        if expires_at is not UNSET:
            field_dict["expires_at"] = expires_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.destination_detail import DestinationDetail  # noqa: PLC0415

        d = dict(src_dict)
        message_id = UUID(d.pop("message_id"))

        correlation_id = d.pop("correlation_id")

        room = d.pop("room")

        event_type = d.pop("event_type")

        event_version = d.pop("event_version")

        payload = d.pop("payload")

        destinations = []
        _destinations = d.pop("destinations")
        for destinations_item_data in _destinations:
            destinations_item = DestinationDetail.from_dict(destinations_item_data)

            destinations.append(destinations_item)

        def _parse_idempotency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key", UNSET))

        ordering_key = d.pop("ordering_key", UNSET)

        _created_at = d.pop("created_at", UNSET)
        created_at: datetime.datetime | Unset
        if isinstance(_created_at, Unset):
            created_at = UNSET
        else:
            created_at = datetime.datetime.fromisoformat(_created_at)

        def _parse_expires_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                expires_at_type_0 = datetime.datetime.fromisoformat(data)

                return expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        expires_at = _parse_expires_at(d.pop("expires_at", UNSET))

        message_detail = cls(
            message_id=message_id,
            correlation_id=correlation_id,
            room=room,
            event_type=event_type,
            event_version=event_version,
            payload=payload,
            destinations=destinations,
            idempotency_key=idempotency_key,
            ordering_key=ordering_key,
            created_at=created_at,
            expires_at=expires_at,
        )

        message_detail.additional_properties = d
        return message_detail

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
