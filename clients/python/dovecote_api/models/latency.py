from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.level_enum import LevelEnum, check_level_enum
from ..types import UNSET, Unset

T = TypeVar("T", bound="Latency")


@_attrs_define
class Latency:
    level: LevelEnum
    """ * `room` - Room
    * `subscription` - Subscription
    * `event_type` - Event Type """
    hour: datetime.datetime
    room: int
    subscription: int | None
    delivered: int
    timed_attempts: int
    event_type: None | str | Unset = UNSET
    latency_p50_ms: int | None | Unset = UNSET
    latency_p95_ms: int | None | Unset = UNSET
    latency_p99_ms: int | None | Unset = UNSET
    duration_p50_ms: int | None | Unset = UNSET
    duration_p95_ms: int | None | Unset = UNSET
    duration_p99_ms: int | None | Unset = UNSET
    duration_max_ms: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        level: str = self.level

        hour = self.hour.isoformat()

        room = self.room

        subscription: int | None
        subscription = self.subscription

        delivered = self.delivered

        timed_attempts = self.timed_attempts

        event_type: None | str | Unset
        if isinstance(self.event_type, Unset):
            event_type = UNSET
        else:
            event_type = self.event_type

        latency_p50_ms: int | None | Unset
        if isinstance(self.latency_p50_ms, Unset):
            latency_p50_ms = UNSET
        else:
            latency_p50_ms = self.latency_p50_ms

        latency_p95_ms: int | None | Unset
        if isinstance(self.latency_p95_ms, Unset):
            latency_p95_ms = UNSET
        else:
            latency_p95_ms = self.latency_p95_ms

        latency_p99_ms: int | None | Unset
        if isinstance(self.latency_p99_ms, Unset):
            latency_p99_ms = UNSET
        else:
            latency_p99_ms = self.latency_p99_ms

        duration_p50_ms: int | None | Unset
        if isinstance(self.duration_p50_ms, Unset):
            duration_p50_ms = UNSET
        else:
            duration_p50_ms = self.duration_p50_ms

        duration_p95_ms: int | None | Unset
        if isinstance(self.duration_p95_ms, Unset):
            duration_p95_ms = UNSET
        else:
            duration_p95_ms = self.duration_p95_ms

        duration_p99_ms: int | None | Unset
        if isinstance(self.duration_p99_ms, Unset):
            duration_p99_ms = UNSET
        else:
            duration_p99_ms = self.duration_p99_ms

        duration_max_ms: int | None | Unset
        if isinstance(self.duration_max_ms, Unset):
            duration_max_ms = UNSET
        else:
            duration_max_ms = self.duration_max_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "level": level,
                "hour": hour,
                "room": room,
                "subscription": subscription,
                "delivered": delivered,
                "timed_attempts": timed_attempts,
            }
        )
        if event_type is not UNSET:
            field_dict["event_type"] = event_type
        if latency_p50_ms is not UNSET:
            field_dict["latency_p50_ms"] = latency_p50_ms
        if latency_p95_ms is not UNSET:
            field_dict["latency_p95_ms"] = latency_p95_ms
        if latency_p99_ms is not UNSET:
            field_dict["latency_p99_ms"] = latency_p99_ms
        if duration_p50_ms is not UNSET:
            field_dict["duration_p50_ms"] = duration_p50_ms
        if duration_p95_ms is not UNSET:
            field_dict["duration_p95_ms"] = duration_p95_ms
        if duration_p99_ms is not UNSET:
            field_dict["duration_p99_ms"] = duration_p99_ms
        if duration_max_ms is not UNSET:
            field_dict["duration_max_ms"] = duration_max_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        level = check_level_enum(d.pop("level"))

        hour = datetime.datetime.fromisoformat(d.pop("hour"))

        room = d.pop("room")

        def _parse_subscription(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        subscription = _parse_subscription(d.pop("subscription"))

        delivered = d.pop("delivered")

        timed_attempts = d.pop("timed_attempts")

        def _parse_event_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        event_type = _parse_event_type(d.pop("event_type", UNSET))

        def _parse_latency_p50_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        latency_p50_ms = _parse_latency_p50_ms(d.pop("latency_p50_ms", UNSET))

        def _parse_latency_p95_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        latency_p95_ms = _parse_latency_p95_ms(d.pop("latency_p95_ms", UNSET))

        def _parse_latency_p99_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        latency_p99_ms = _parse_latency_p99_ms(d.pop("latency_p99_ms", UNSET))

        def _parse_duration_p50_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        duration_p50_ms = _parse_duration_p50_ms(d.pop("duration_p50_ms", UNSET))

        def _parse_duration_p95_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        duration_p95_ms = _parse_duration_p95_ms(d.pop("duration_p95_ms", UNSET))

        def _parse_duration_p99_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        duration_p99_ms = _parse_duration_p99_ms(d.pop("duration_p99_ms", UNSET))

        def _parse_duration_max_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        duration_max_ms = _parse_duration_max_ms(d.pop("duration_max_ms", UNSET))

        latency = cls(
            level=level,
            hour=hour,
            room=room,
            subscription=subscription,
            delivered=delivered,
            timed_attempts=timed_attempts,
            event_type=event_type,
            latency_p50_ms=latency_p50_ms,
            latency_p95_ms=latency_p95_ms,
            latency_p99_ms=latency_p99_ms,
            duration_p50_ms=duration_p50_ms,
            duration_p95_ms=duration_p95_ms,
            duration_p99_ms=duration_p99_ms,
            duration_max_ms=duration_max_ms,
        )

        latency.additional_properties = d
        return latency

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
