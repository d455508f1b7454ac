from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.delivery_status_enum import DeliveryStatusEnum, check_delivery_status_enum
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.attempt import Attempt


T = TypeVar("T", bound="DestinationDetail")


@_attrs_define
class DestinationDetail:
    subscription: int | None
    destination: str
    updated_at: datetime.datetime
    timeline: list[Attempt]
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
    last_status_code: int | None | Unset = UNSET
    last_error: str | Unset = UNSET
    ordering_key: str | Unset = UNSET
    parks_key: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        subscription: int | None
        subscription = self.subscription

        destination = self.destination

        updated_at = self.updated_at.isoformat()

        timeline = []
        for timeline_item_data in self.timeline:
            timeline_item = timeline_item_data.to_dict()
            timeline.append(timeline_item)

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

        last_status_code: int | None | Unset
        if isinstance(self.last_status_code, Unset):
            last_status_code = UNSET
        else:
            last_status_code = self.last_status_code

        last_error = self.last_error

        ordering_key = self.ordering_key

        parks_key = self.parks_key

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "subscription": subscription,
                "destination": destination,
                "updated_at": updated_at,
                "timeline": timeline,
            }
        )
        if status is not UNSET:
            field_dict["status"] = status
        if attempts is not UNSET:
            field_dict["attempts"] = attempts
        if next_attempt_at is not UNSET:
            field_dict["next_attempt_at"] = next_attempt_at
        if last_status_code is not UNSET:
            field_dict["last_status_code"] = last_status_code
        if last_error is not UNSET:
            field_dict["last_error"] = last_error
        if ordering_key is not UNSET:
            field_dict["ordering_key"] = ordering_key
        if parks_key is not UNSET:
            field_dict["parks_key"] = parks_key

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.attempt import Attempt  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_subscription(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        subscription = _parse_subscription(d.pop("subscription"))

        destination = d.pop("destination")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        timeline = []
        _timeline = d.pop("timeline")
        for timeline_item_data in _timeline:
            timeline_item = Attempt.from_dict(timeline_item_data)

            timeline.append(timeline_item)

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

        def _parse_last_status_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        last_status_code = _parse_last_status_code(d.pop("last_status_code", UNSET))

        last_error = d.pop("last_error", UNSET)

        ordering_key = d.pop("ordering_key", UNSET)

        parks_key = d.pop("parks_key", UNSET)

        destination_detail = cls(
            subscription=subscription,
            destination=destination,
            updated_at=updated_at,
            timeline=timeline,
            status=status,
            attempts=attempts,
            next_attempt_at=next_attempt_at,
            last_status_code=last_status_code,
            last_error=last_error,
            ordering_key=ordering_key,
            parks_key=parks_key,
        )

        destination_detail.additional_properties = d
        return destination_detail

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
