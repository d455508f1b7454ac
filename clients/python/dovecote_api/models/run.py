from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.mode_enum import ModeEnum, check_mode_enum
from ..models.run_status_enum import RunStatusEnum, check_run_status_enum
from ..types import UNSET, Unset

T = TypeVar("T", bound="Run")


@_attrs_define
class Run:
    """A report run; where it ran (`master`), what it recomputed (`scope`) and why it failed (`error`) are
    internal to the operators, so only admin keys see them (null for the others, context `internals`).

    """

    id: int
    status: RunStatusEnum
    """ * `requested` - Requested
    * `running` - Running
    * `succeeded` - Succeeded
    * `failed` - Failed """
    mode: ModeEnum
    """ * `full` - Full
    * `incremental` - Incremental """
    master: None | str
    """ Admin keys only; null for room keys. """
    requested_at: datetime.datetime | None
    """ When the console asked for it, if it did. """
    started_at: datetime.datetime | None
    """ Null while requested. """
    heartbeat_at: datetime.datetime | None
    """ Written by the running run's driver every few seconds (while requested: by the process waiting for it, if
    one does). """
    progress: int
    """ 0 to 100. """
    stage: str
    scope: None | str
    """ Admin keys only; null for room keys. """
    error: None | str
    """ Admin keys only; null for room keys. """
    window_start: datetime.datetime | None | Unset = UNSET
    """ --since, if given. """
    window_end: datetime.datetime | None | Unset = UNSET
    """ --until, if given. """
    finished_at: datetime.datetime | None | Unset = UNSET
    hours_processed: int | None | Unset = UNSET
    rows_written: int | None | Unset = UNSET
    watermark_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        status: str = self.status

        mode: str = self.mode

        master: None | str
        master = self.master

        requested_at: None | str
        if isinstance(self.requested_at, datetime.datetime):
            requested_at = self.requested_at.isoformat()
        else:
            requested_at = self.requested_at

        started_at: None | str
        if isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        heartbeat_at: None | str
        if isinstance(self.heartbeat_at, datetime.datetime):
            heartbeat_at = self.heartbeat_at.isoformat()
        else:
            heartbeat_at = self.heartbeat_at

        progress = self.progress

        stage = self.stage

        scope: None | str
        scope = self.scope

        error: None | str
        error = self.error

        window_start: None | str | Unset
        if isinstance(self.window_start, Unset):
            window_start = UNSET
        elif isinstance(self.window_start, datetime.datetime):
            window_start = self.window_start.isoformat()
        else:
            window_start = self.window_start

        window_end: None | str | Unset
        if isinstance(self.window_end, Unset):
            window_end = UNSET
        elif isinstance(self.window_end, datetime.datetime):
            window_end = self.window_end.isoformat()
        else:
            window_end = self.window_end

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        elif isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        hours_processed: int | None | Unset
        if isinstance(self.hours_processed, Unset):
            hours_processed = UNSET
        else:
            hours_processed = self.hours_processed

        rows_written: int | None | Unset
        if isinstance(self.rows_written, Unset):
            rows_written = UNSET
        else:
            rows_written = self.rows_written

        watermark_at: None | str | Unset
        if isinstance(self.watermark_at, Unset):
            watermark_at = UNSET
        elif isinstance(self.watermark_at, datetime.datetime):
            watermark_at = self.watermark_at.isoformat()
        else:
            watermark_at = self.watermark_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "status": status,
                "mode": mode,
                "master": master,
                "requested_at": requested_at,
                "started_at": started_at,
                "heartbeat_at": heartbeat_at,
                "progress": progress,
                "stage": stage,
                "scope": scope,
                "error": error,
            }
        )
        if window_start is not UNSET:
            field_dict["window_start"] = window_start
        if window_end is not UNSET:
            field_dict["window_end"] = window_end
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if hours_processed is not UNSET:
            field_dict["hours_processed"] = hours_processed
        if rows_written is not UNSET:
            field_dict["rows_written"] = rows_written
        if watermark_at is not UNSET:
            field_dict["watermark_at"] = watermark_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        status = check_run_status_enum(d.pop("status"))

        mode = check_mode_enum(d.pop("mode"))

        def _parse_master(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        master = _parse_master(d.pop("master"))

        def _parse_requested_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                requested_at_type_0 = datetime.datetime.fromisoformat(data)

                return requested_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        requested_at = _parse_requested_at(d.pop("requested_at"))

        def _parse_started_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                started_at_type_0 = datetime.datetime.fromisoformat(data)

                return started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        started_at = _parse_started_at(d.pop("started_at"))

        def _parse_heartbeat_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                heartbeat_at_type_0 = datetime.datetime.fromisoformat(data)

                return heartbeat_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        heartbeat_at = _parse_heartbeat_at(d.pop("heartbeat_at"))

        progress = d.pop("progress")

        stage = d.pop("stage")

        def _parse_scope(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        scope = _parse_scope(d.pop("scope"))

        def _parse_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error = _parse_error(d.pop("error"))

        def _parse_window_start(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                window_start_type_0 = datetime.datetime.fromisoformat(data)

                return window_start_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        window_start = _parse_window_start(d.pop("window_start", UNSET))

        def _parse_window_end(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                window_end_type_0 = datetime.datetime.fromisoformat(data)

                return window_end_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        window_end = _parse_window_end(d.pop("window_end", UNSET))

        def _parse_finished_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))

        def _parse_hours_processed(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        hours_processed = _parse_hours_processed(d.pop("hours_processed", UNSET))

        def _parse_rows_written(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        rows_written = _parse_rows_written(d.pop("rows_written", UNSET))

        def _parse_watermark_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                watermark_at_type_0 = datetime.datetime.fromisoformat(data)

                return watermark_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        watermark_at = _parse_watermark_at(d.pop("watermark_at", UNSET))

        run = cls(
            id=id,
            status=status,
            mode=mode,
            master=master,
            requested_at=requested_at,
            started_at=started_at,
            heartbeat_at=heartbeat_at,
            progress=progress,
            stage=stage,
            scope=scope,
            error=error,
            window_start=window_start,
            window_end=window_end,
            finished_at=finished_at,
            hours_processed=hours_processed,
            rows_written=rows_written,
            watermark_at=watermark_at,
        )

        run.additional_properties = d
        return run

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
