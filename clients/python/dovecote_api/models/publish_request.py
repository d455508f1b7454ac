from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="PublishRequest")


@_attrs_define
class PublishRequest:
    event_type: str
    event_version: str
    payload: Any
    correlation_id: str | Unset = UNSET
    idempotency_key: str | Unset = UNSET
    ordering_key: str | Unset = UNSET
    """ Subscriptions with `ordering` on get the events of one key one at a time, in publish order. """

    def to_dict(self) -> dict[str, Any]:
        event_type = self.event_type

        event_version = self.event_version

        payload = self.payload

        correlation_id = self.correlation_id

        idempotency_key = self.idempotency_key

        ordering_key = self.ordering_key

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "event_type": event_type,
                "event_version": event_version,
                "payload": payload,
            }
        )
        if correlation_id is not UNSET:
            field_dict["correlation_id"] = correlation_id
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if ordering_key is not UNSET:
            field_dict["ordering_key"] = ordering_key

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        event_type = d.pop("event_type")

        event_version = d.pop("event_version")

        payload = d.pop("payload")

        correlation_id = d.pop("correlation_id", UNSET)

        idempotency_key = d.pop("idempotency_key", UNSET)

        ordering_key = d.pop("ordering_key", UNSET)

        publish_request = cls(
            event_type=event_type,
            event_version=event_version,
            payload=payload,
            correlation_id=correlation_id,
            idempotency_key=idempotency_key,
            ordering_key=ordering_key,
        )

        return publish_request
