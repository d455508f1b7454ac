from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="FieldErrors")


@_attrs_define
class FieldErrors:
    """Each bad field (or `detail`, or `non_field_errors`) with its messages; a batch names its items by index under
    `messages`. A field the endpoint does not know is refused, never ignored: `Unknown field. Did you mean "…"?` names
    the field meant when the name is a near miss.

        Example:
            {'event_type': ['This field is required.'], 'delivery_attemps': ['Unknown field. Did you mean
                "delivery_attempts"?']}

    """

    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        field_errors = cls()

        field_errors.additional_properties = d
        return field_errors

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
