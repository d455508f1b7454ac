from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.destination import Destination


T = TypeVar("T", bound="PublishReply")


@_attrs_define
class PublishReply:
    message_id: UUID
    correlation_id: str
    destination_count: int
    """ How many destinations the event was sent to (paused subscriptions too: they hold it); 0: it matched no
    subscription and is in the message log as `unroutable` until it is re-published. """
    destinations: list[Destination]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        message_id = str(self.message_id)

        correlation_id = self.correlation_id

        destination_count = self.destination_count

        destinations = []
        for destinations_item_data in self.destinations:
            destinations_item = destinations_item_data.to_dict()
            destinations.append(destinations_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "message_id": message_id,
                "correlation_id": correlation_id,
                "destination_count": destination_count,
                "destinations": destinations,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.destination import Destination  # noqa: PLC0415

        d = dict(src_dict)
        message_id = UUID(d.pop("message_id"))

        correlation_id = d.pop("correlation_id")

        destination_count = d.pop("destination_count")

        destinations = []
        _destinations = d.pop("destinations")
        for destinations_item_data in _destinations:
            destinations_item = Destination.from_dict(destinations_item_data)

            destinations.append(destinations_item)

        publish_reply = cls(
            message_id=message_id,
            correlation_id=correlation_id,
            destination_count=destination_count,
            destinations=destinations,
        )

        publish_reply.additional_properties = d
        return publish_reply

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
