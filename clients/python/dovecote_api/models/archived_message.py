from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.archived_message_archive_location import ArchivedMessageArchiveLocation


T = TypeVar("T", bound="ArchivedMessage")


@_attrs_define
class ArchivedMessage:
    """What is left in PostgreSQL of a message retention moved to the archive (docs/analytics.md)."""

    message_id: UUID
    room: int
    archived_at: datetime.datetime
    archive_batch: int
    """ The archive batch that moved it. """
    archive_location: ArchivedMessageArchiveLocation
    """ Where its rows are: one Parquet folder per table, under DOVECOTE_ARCHIVE_URL. """
    status: str | Unset = "archived"
    """ Always `archived`. """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        message_id = str(self.message_id)

        room = self.room

        archived_at = self.archived_at.isoformat()

        archive_batch = self.archive_batch

        archive_location = self.archive_location.to_dict()

        status = self.status

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "message_id": message_id,
                "room": room,
                "archived_at": archived_at,
                "archive_batch": archive_batch,
                "archive_location": archive_location,
            }
        )
        if status is not UNSET:
            field_dict["status"] = status

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.archived_message_archive_location import ArchivedMessageArchiveLocation  # noqa: PLC0415

        d = dict(src_dict)
        message_id = UUID(d.pop("message_id"))

        room = d.pop("room")

        archived_at = datetime.datetime.fromisoformat(d.pop("archived_at"))

        archive_batch = d.pop("archive_batch")

        archive_location = ArchivedMessageArchiveLocation.from_dict(d.pop("archive_location"))

        status = d.pop("status", UNSET)

        archived_message = cls(
            message_id=message_id,
            room=room,
            archived_at=archived_at,
            archive_batch=archive_batch,
            archive_location=archive_location,
            status=status,
        )

        archived_message.additional_properties = d
        return archived_message

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
