from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="DeadLetterSelectionRequest")


@_attrs_define
class DeadLetterSelectionRequest:
    message_ids: list[UUID] | Unset = UNSET
    all_: bool | Unset = False

    def to_dict(self) -> dict[str, Any]:
        message_ids: list[str] | Unset = UNSET
        if not isinstance(self.message_ids, Unset):
            message_ids = []
            for message_ids_item_data in self.message_ids:
                message_ids_item = str(message_ids_item_data)
                message_ids.append(message_ids_item)

        all_ = self.all_

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if message_ids is not UNSET:
            field_dict["message_ids"] = message_ids
        if all_ is not UNSET:
            field_dict["all"] = all_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        _message_ids = d.pop("message_ids", UNSET)
        message_ids: list[UUID] | Unset = UNSET
        if _message_ids is not UNSET:
            message_ids = []
            for message_ids_item_data in _message_ids:
                message_ids_item = UUID(message_ids_item_data)

                message_ids.append(message_ids_item)

        all_ = d.pop("all", UNSET)

        dead_letter_selection_request = cls(
            message_ids=message_ids,
            all_=all_,
        )

        return dead_letter_selection_request
