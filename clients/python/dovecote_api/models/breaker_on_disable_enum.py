from typing import Literal

BreakerOnDisableEnum = Literal["dead_letter", "hold"]

BREAKER_ON_DISABLE_ENUM_VALUES: set[BreakerOnDisableEnum] = {
    "dead_letter",
    "hold",
}


def check_breaker_on_disable_enum(value: str) -> BreakerOnDisableEnum:
    if value in BREAKER_ON_DISABLE_ENUM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {BREAKER_ON_DISABLE_ENUM_VALUES!r}")
