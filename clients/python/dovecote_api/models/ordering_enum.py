from typing import Literal

OrderingEnum = Literal["off", "on", "park"]

ORDERING_ENUM_VALUES: set[OrderingEnum] = {
    "off",
    "on",
    "park",
}


def check_ordering_enum(value: str) -> OrderingEnum:
    if value in ORDERING_ENUM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {ORDERING_ENUM_VALUES!r}")
