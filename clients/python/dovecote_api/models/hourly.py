from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Hourly")


@_attrs_define
class Hourly:
    hour: datetime.datetime
    room: int
    subscription: int | None
    event_type: str
    published: int
    delivered: int
    attempts: int
    failed_attempts: int
    retried: int
    dead_lettered: int
    expired: int
    success_rate: float | None | Unset = UNSET
    attempts_per_delivered: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        hour = self.hour.isoformat()

        room = self.room

        subscription: int | None
        subscription = self.subscription

        event_type = self.event_type

        published = self.published

        delivered = self.delivered

        attempts = self.attempts

        failed_attempts = self.failed_attempts

        retried = self.retried

        dead_lettered = self.dead_lettered

        expired = self.expired

        success_rate: float | None | Unset
        if isinstance(self.success_rate, Unset):
            success_rate = UNSET
        else:
            success_rate = self.success_rate

        attempts_per_delivered: float | None | Unset
        if isinstance(self.attempts_per_delivered, Unset):
            attempts_per_delivered = UNSET
        else:
            attempts_per_delivered = self.attempts_per_delivered

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "hour": hour,
                "room": room,
                "subscription": subscription,
                "event_type": event_type,
                "published": published,
                "delivered": delivered,
                "attempts": attempts,
                "failed_attempts": failed_attempts,
                "retried": retried,
                "dead_lettered": dead_lettered,
                "expired": expired,
            }
        )
        if success_rate is not UNSET:
            field_dict["success_rate"] = success_rate
        if attempts_per_delivered is not UNSET:
            field_dict["attempts_per_delivered"] = attempts_per_delivered

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

        event_type = d.pop("event_type")

        published = d.pop("published")

        delivered = d.pop("delivered")

        attempts = d.pop("attempts")

        failed_attempts = d.pop("failed_attempts")

        retried = d.pop("retried")

        dead_lettered = d.pop("dead_lettered")

        expired = d.pop("expired")

        def _parse_success_rate(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        success_rate = _parse_success_rate(d.pop("success_rate", UNSET))

        def _parse_attempts_per_delivered(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        attempts_per_delivered = _parse_attempts_per_delivered(d.pop("attempts_per_delivered", UNSET))

        hourly = cls(
            hour=hour,
            room=room,
            subscription=subscription,
            event_type=event_type,
            published=published,
            delivered=delivered,
            attempts=attempts,
            failed_attempts=failed_attempts,
            retried=retried,
            dead_lettered=dead_lettered,
            expired=expired,
            success_rate=success_rate,
            attempts_per_delivered=attempts_per_delivered,
        )

        hourly.additional_properties = d
        return hourly

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
