from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="SubscriptionRequestFilterType0")


@_attrs_define
class SubscriptionRequestFilterType0:
    """A payload filter (Hookdeck/Outpost filter syntax; docs/delivery-semantics.md#payload-filters), applied at publish to
    `{"type", "version", "room", "correlation_id", "data": payload}`: an object shaped like that document (its top-level
    fields are those five) whose keys walk into it and whose leaves are a value to equal or an object of operators
    `$eq`, `$neq`, `$gt`, `$gte`, `$lt`, `$lte`, `$in`, `$startsWith`, `$exist`, combined with `$and`, `$or`, `$not`.
    Every key of an object must match. Only `$exist` is true of a missing field. At most 4096 bytes, 64 fields and
    operators, 8 nested objects, 100 values in an `$in`. Null: no filter. A 400 names each fault by its JSON path in the
    filter (`$.data.total.$gte: …`).

        Example:
            {'data': {'total': {'$gte': 100}, 'country': {'$in': ['FR', 'DE']}}, '$not': {'data': {'test': True}}}

    """

    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        subscription_request_filter_type_0 = cls()

        subscription_request_filter_type_0.additional_properties = d
        return subscription_request_filter_type_0

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
