from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ReleasedKey")


@_attrs_define
class ReleasedKey:
    ordering_key: str
    released_message_id: None | UUID
    """ The next event of the key, now sent; null: none waited. """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        ordering_key = self.ordering_key

        released_message_id: None | str
        if isinstance(self.released_message_id, UUID):
            released_message_id = str(self.released_message_id)
        else:
            released_message_id = self.released_message_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "ordering_key": ordering_key,
                "released_message_id": released_message_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        ordering_key = d.pop("ordering_key")

        def _parse_released_message_id(data: object) -> None | UUID:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                released_message_id_type_0 = UUID(data)

                return released_message_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | UUID, data)

        released_message_id = _parse_released_message_id(d.pop("released_message_id"))

        released_key = cls(
            ordering_key=ordering_key,
            released_message_id=released_message_id,
        )

        released_key.additional_properties = d
        return released_key

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
