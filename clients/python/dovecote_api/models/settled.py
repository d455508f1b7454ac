from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.ack_failure import AckFailure


T = TypeVar("T", bound="Settled")


@_attrs_define
class Settled:
    done: list[str]
    """ The ack ids it applied to. """
    failed: list[AckFailure]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        done = self.done

        failed = []
        for failed_item_data in self.failed:
            failed_item = failed_item_data.to_dict()
            failed.append(failed_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "done": done,
                "failed": failed,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.ack_failure import AckFailure  # noqa: PLC0415

        d = dict(src_dict)
        done = cast(list[str], d.pop("done"))

        failed = []
        _failed = d.pop("failed")
        for failed_item_data in _failed:
            failed_item = AckFailure.from_dict(failed_item_data)

            failed.append(failed_item)

        settled = cls(
            done=done,
            failed=failed,
        )

        settled.additional_properties = d
        return settled

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
