from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="RetryCost")


@_attrs_define
class RetryCost:
    hour: datetime.datetime
    room: int
    publishes: int
    replays: int
    retries: int
    dead_letters: int
    rechecks: int
    retry_delay_ms: int
    retry_attempts: int
    extra_sends_per_publish: float | None
    """ Retry sends per first publish: the broker traffic the EBR settings added. """
    subscription: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        hour = self.hour.isoformat()

        room = self.room

        publishes = self.publishes

        replays = self.replays

        retries = self.retries

        dead_letters = self.dead_letters

        rechecks = self.rechecks

        retry_delay_ms = self.retry_delay_ms

        retry_attempts = self.retry_attempts

        extra_sends_per_publish: float | None
        extra_sends_per_publish = self.extra_sends_per_publish

        subscription: int | None | Unset
        if isinstance(self.subscription, Unset):
            subscription = UNSET
        else:
            subscription = self.subscription

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "hour": hour,
                "room": room,
                "publishes": publishes,
                "replays": replays,
                "retries": retries,
                "dead_letters": dead_letters,
                "rechecks": rechecks,
                "retry_delay_ms": retry_delay_ms,
                "retry_attempts": retry_attempts,
                "extra_sends_per_publish": extra_sends_per_publish,
            }
        )
        if subscription is not UNSET:
            field_dict["subscription"] = subscription

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        hour = datetime.datetime.fromisoformat(d.pop("hour"))

        room = d.pop("room")

        publishes = d.pop("publishes")

        replays = d.pop("replays")

        retries = d.pop("retries")

        dead_letters = d.pop("dead_letters")

        rechecks = d.pop("rechecks")

        retry_delay_ms = d.pop("retry_delay_ms")

        retry_attempts = d.pop("retry_attempts")

        def _parse_extra_sends_per_publish(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        extra_sends_per_publish = _parse_extra_sends_per_publish(d.pop("extra_sends_per_publish"))

        def _parse_subscription(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        subscription = _parse_subscription(d.pop("subscription", UNSET))

        retry_cost = cls(
            hour=hour,
            room=room,
            publishes=publishes,
            replays=replays,
            retries=retries,
            dead_letters=dead_letters,
            rechecks=rechecks,
            retry_delay_ms=retry_delay_ms,
            retry_attempts=retry_attempts,
            extra_sends_per_publish=extra_sends_per_publish,
            subscription=subscription,
        )

        retry_cost.additional_properties = d
        return retry_cost

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
