from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.action_enum import ActionEnum, check_action_enum
from ..types import UNSET, Unset

T = TypeVar("T", bound="NackRequest")


@_attrs_define
class NackRequest:
    ack_ids: list[str]
    action: ActionEnum | Unset = "retry"
    """ * `retry` - retry
    * `dead_letter` - dead_letter """
    delay_ms: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        ack_ids = self.ack_ids

        action: str | Unset = UNSET
        if not isinstance(self.action, Unset):
            action = self.action

        delay_ms: int | None | Unset
        if isinstance(self.delay_ms, Unset):
            delay_ms = UNSET
        else:
            delay_ms = self.delay_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "ack_ids": ack_ids,
            }
        )
        if action is not UNSET:
            field_dict["action"] = action
        if delay_ms is not UNSET:
            field_dict["delay_ms"] = delay_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        ack_ids = cast(list[str], d.pop("ack_ids"))

        _action = d.pop("action", UNSET)
        action: ActionEnum | Unset
        if isinstance(_action, Unset):
            action = UNSET
        else:
            action = check_action_enum(_action)

        def _parse_delay_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        delay_ms = _parse_delay_ms(d.pop("delay_ms", UNSET))

        nack_request = cls(
            ack_ids=ack_ids,
            action=action,
            delay_ms=delay_ms,
        )

        return nack_request
