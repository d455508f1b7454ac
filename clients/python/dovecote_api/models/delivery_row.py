from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.delivery_status_enum import DeliveryStatusEnum, check_delivery_status_enum
from ..types import UNSET, Unset

T = TypeVar("T", bound="DeliveryRow")


@_attrs_define
class DeliveryRow:
    """One row of the message log: a message on its way to one destination."""

    message_id: UUID
    correlation_id: str
    room: int
    subscription: int | None
    destination: str
    event_type: str
    event_version: str
    updated_at: datetime.datetime
    status: DeliveryStatusEnum | Unset = UNSET
    """ * `pending` - pending (not yet confirmed by the broker)
    * `queued` - Queued
    * `retrying` - Retrying
    * `delivered` - Delivered
    * `leased` - Leased
    * `acked` - Acked
    * `dead_lettered` - dead-lettered
    * `expired` - Expired
    * `unroutable` - unroutable (no subscription matched)
    * `held` - held (behind an earlier event of its ordering key) """
    attempts: int | Unset = UNSET
    """ Attempts started so far. """
    next_attempt_at: datetime.datetime | None | Unset = UNSET
    last_error: str | Unset = UNSET
    ordering_key: str | Unset = UNSET
    parks_key: bool | Unset = UNSET
    created_at: datetime.datetime | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        message_id = str(self.message_id)

        correlation_id = self.correlation_id

        room = self.room

        subscription: int | None
        subscription = self.subscription

        destination = self.destination

        event_type = self.event_type

        event_version = self.event_version

        updated_at = self.updated_at.isoformat()

        status: str | Unset = UNSET
        if not isinstance(self.status, Unset):
            status = self.status

        attempts = self.attempts

        next_attempt_at: None | str | Unset
        if isinstance(self.next_attempt_at, Unset):
            next_attempt_at = UNSET
        elif isinstance(self.next_attempt_at, datetime.datetime):
            next_attempt_at = self.next_attempt_at.isoformat()
        else:
            next_attempt_at = self.next_attempt_at

        last_error = self.last_error

        ordering_key = self.ordering_key

        parks_key = self.parks_key

        created_at: str | Unset = UNSET
        if not isinstance(self.created_at, Unset):
            created_at = self.created_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "message_id": message_id,
                "correlation_id": correlation_id,
                "room": room,
                "subscription": subscription,
                "destination": destination,
                "event_type": event_type,
                "event_version": event_version,
                "updated_at": updated_at,
            }
        )
        if status is not UNSET:
            field_dict["status"] = status
        if attempts is not UNSET:
            field_dict["attempts"] = attempts
        if next_attempt_at is not UNSET:
            field_dict["next_attempt_at"] = next_attempt_at
        if last_error is not UNSET:
            field_dict["last_error"] = last_error
        if ordering_key is not UNSET:
            field_dict["ordering_key"] = ordering_key
        if parks_key is not UNSET:
            field_dict["parks_key"] = parks_key
        if created_at is not UNSET:
            field_dict["created_at"] = created_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        message_id = UUID(d.pop("message_id"))

        correlation_id = d.pop("correlation_id")

        room = d.pop("room")

        def _parse_subscription(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        subscription = _parse_subscription(d.pop("subscription"))

        destination = d.pop("destination")

        event_type = d.pop("event_type")

        event_version = d.pop("event_version")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        _status = d.pop("status", UNSET)
        status: DeliveryStatusEnum | Unset
        if isinstance(_status, Unset):
            status = UNSET
        else:
            status = check_delivery_status_enum(_status)

        attempts = d.pop("attempts", UNSET)

        def _parse_next_attempt_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_attempt_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_attempt_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        next_attempt_at = _parse_next_attempt_at(d.pop("next_attempt_at", UNSET))

        last_error = d.pop("last_error", UNSET)

        ordering_key = d.pop("ordering_key", UNSET)

        parks_key = d.pop("parks_key", UNSET)

        _created_at = d.pop("created_at", UNSET)
        created_at: datetime.datetime | Unset
        if isinstance(_created_at, Unset):
            created_at = UNSET
        else:
            created_at = datetime.datetime.fromisoformat(_created_at)

        delivery_row = cls(
            message_id=message_id,
            correlation_id=correlation_id,
            room=room,
            subscription=subscription,
            destination=destination,
            event_type=event_type,
            event_version=event_version,
            updated_at=updated_at,
            status=status,
            attempts=attempts,
            next_attempt_at=next_attempt_at,
            last_error=last_error,
            ordering_key=ordering_key,
            parks_key=parks_key,
            created_at=created_at,
        )

        delivery_row.additional_properties = d
        return delivery_row

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
