from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="DeadLetterSelectionRequest")


@_attrs_define
class DeadLetterSelectionRequest:
    message_ids: list[UUID] | Unset = UNSET
    all_: bool | Unset = False
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        message_ids: list[str] | Unset = UNSET
        if not isinstance(self.message_ids, Unset):
            message_ids = []
            for message_ids_item_data in self.message_ids:
                message_ids_item = str(message_ids_item_data)
                message_ids.append(message_ids_item)

        all_ = self.all_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
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

        dead_letter_selection_request.additional_properties = d
        return dead_letter_selection_request

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
