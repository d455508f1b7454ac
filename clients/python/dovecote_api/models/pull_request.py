from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="PullRequest")


@_attrs_define
class PullRequest:
    max_messages: int | Unset = 10
    lease_ms: int | Unset = 30000
    wait_ms: int | Unset = 0

    def to_dict(self) -> dict[str, Any]:
        max_messages = self.max_messages

        lease_ms = self.lease_ms

        wait_ms = self.wait_ms

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if max_messages is not UNSET:
            field_dict["max_messages"] = max_messages
        if lease_ms is not UNSET:
            field_dict["lease_ms"] = lease_ms
        if wait_ms is not UNSET:
            field_dict["wait_ms"] = wait_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        max_messages = d.pop("max_messages", UNSET)

        lease_ms = d.pop("lease_ms", UNSET)

        wait_ms = d.pop("wait_ms", UNSET)

        pull_request = cls(
            max_messages=max_messages,
            lease_ms=lease_ms,
            wait_ms=wait_ms,
        )

        return pull_request
