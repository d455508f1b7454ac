from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Endpoint")


@_attrs_define
class Endpoint:
    room: int
    subscription: int
    name: None | str
    push_url: None | str
    timed_attempts: int
    worst_hour_p50_ms: int | None
    worst_hour_p95_ms: int | None
    worst_hour_p99_ms: int | None
    duration_max_ms: int | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        room = self.room

        subscription = self.subscription

        name: None | str
        name = self.name

        push_url: None | str
        push_url = self.push_url

        timed_attempts = self.timed_attempts

        worst_hour_p50_ms: int | None
        worst_hour_p50_ms = self.worst_hour_p50_ms

        worst_hour_p95_ms: int | None
        worst_hour_p95_ms = self.worst_hour_p95_ms

        worst_hour_p99_ms: int | None
        worst_hour_p99_ms = self.worst_hour_p99_ms

        duration_max_ms: int | None
        duration_max_ms = self.duration_max_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "room": room,
                "subscription": subscription,
                "name": name,
                "push_url": push_url,
                "timed_attempts": timed_attempts,
                "worst_hour_p50_ms": worst_hour_p50_ms,
                "worst_hour_p95_ms": worst_hour_p95_ms,
                "worst_hour_p99_ms": worst_hour_p99_ms,
                "duration_max_ms": duration_max_ms,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        room = d.pop("room")

        subscription = d.pop("subscription")

        def _parse_name(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        name = _parse_name(d.pop("name"))

        def _parse_push_url(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        push_url = _parse_push_url(d.pop("push_url"))

        timed_attempts = d.pop("timed_attempts")

        def _parse_worst_hour_p50_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        worst_hour_p50_ms = _parse_worst_hour_p50_ms(d.pop("worst_hour_p50_ms"))

        def _parse_worst_hour_p95_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        worst_hour_p95_ms = _parse_worst_hour_p95_ms(d.pop("worst_hour_p95_ms"))

        def _parse_worst_hour_p99_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        worst_hour_p99_ms = _parse_worst_hour_p99_ms(d.pop("worst_hour_p99_ms"))

        def _parse_duration_max_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        duration_max_ms = _parse_duration_max_ms(d.pop("duration_max_ms"))

        endpoint = cls(
            room=room,
            subscription=subscription,
            name=name,
            push_url=push_url,
            timed_attempts=timed_attempts,
            worst_hour_p50_ms=worst_hour_p50_ms,
            worst_hour_p95_ms=worst_hour_p95_ms,
            worst_hour_p99_ms=worst_hour_p99_ms,
            duration_max_ms=duration_max_ms,
        )

        endpoint.additional_properties = d
        return endpoint

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
