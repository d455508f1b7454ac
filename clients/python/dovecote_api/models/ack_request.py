from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

T = TypeVar("T", bound="AckRequest")


@_attrs_define
class AckRequest:
    ack_ids: list[str]

    def to_dict(self) -> dict[str, Any]:
        ack_ids = self.ack_ids

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "ack_ids": ack_ids,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        ack_ids = cast(list[str], d.pop("ack_ids"))

        ack_request = cls(
            ack_ids=ack_ids,
        )

        return ack_request
