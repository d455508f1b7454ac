from typing import Literal

ModeEnum = Literal["full", "incremental"]

MODE_ENUM_VALUES: set[ModeEnum] = {
    "full",
    "incremental",
}


def check_mode_enum(value: str) -> ModeEnum:
    if value in MODE_ENUM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {MODE_ENUM_VALUES!r}")
