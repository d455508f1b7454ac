from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ExtendRequest")


@_attrs_define
class ExtendRequest:
    ack_ids: list[str]
    lease_ms: int | Unset = 30000
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        ack_ids = self.ack_ids

        lease_ms = self.lease_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
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

        extend_request.additional_properties = d
        return extend_request

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
