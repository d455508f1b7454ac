from typing import Literal

RunStatusEnum = Literal["failed", "requested", "running", "succeeded"]

RUN_STATUS_ENUM_VALUES: set[RunStatusEnum] = {
    "failed",
    "requested",
    "running",
    "succeeded",
}


def check_run_status_enum(value: str) -> RunStatusEnum:
    if value in RUN_STATUS_ENUM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {RUN_STATUS_ENUM_VALUES!r}")
