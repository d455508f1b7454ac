from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="ReleaseKeyRequest")


@_attrs_define
class ReleaseKeyRequest:
    ordering_key: str

    def to_dict(self) -> dict[str, Any]:
        ordering_key = self.ordering_key

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "ordering_key": ordering_key,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        ordering_key = d.pop("ordering_key")

        release_key_request = cls(
            ordering_key=ordering_key,
        )

        return release_key_request
