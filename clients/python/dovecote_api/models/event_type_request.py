from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="EventTypeRequest")


@_attrs_define
class EventTypeRequest:
    """An event type of the room in the serializer's context (`room`)."""

    name: str
    version: str | Unset = "1"
    schema: Any | Unset = UNSET
    """ A JSON Schema (draft 2020-12) object that payloads must satisfy; null: any payload. """

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        version = self.version

        schema = self.schema

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if version is not UNSET:
            field_dict["version"] = version
        if schema is not UNSET:
            field_dict["schema"] = schema

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        version = d.pop("version", UNSET)

        schema = d.pop("schema", UNSET)

        event_type_request = cls(
            name=name,
            version=version,
            schema=schema,
        )

        return event_type_request
