from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ExtendRequest")


@_attrs_define
class ExtendRequest:
    ack_ids: list[str]
    lease_ms: int | Unset = 30000

    def to_dict(self) -> dict[str, Any]:
        ack_ids = self.ack_ids

        lease_ms = self.lease_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "ack_ids": ack_ids,
            }
        )
        if lease_ms is not UNSET:
            field_dict["lease_ms"] = lease_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        ack_ids = cast(list[str], d.pop("ack_ids"))

        lease_ms = d.pop("lease_ms", UNSET)

        extend_request = cls(
            ack_ids=ack_ids,
            lease_ms=lease_ms,
        )

        return extend_request
