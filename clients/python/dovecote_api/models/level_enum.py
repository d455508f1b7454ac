from typing import Literal

LevelEnum = Literal["event_type", "room", "subscription"]

LEVEL_ENUM_VALUES: set[LevelEnum] = {
    "event_type",
    "room",
    "subscription",
}


def check_level_enum(value: str) -> LevelEnum:
    if value in LEVEL_ENUM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {LEVEL_ENUM_VALUES!r}")
