from typing import Literal

BreakerStateEnum = Literal["closed", "half_open", "open"]

BREAKER_STATE_ENUM_VALUES: set[BreakerStateEnum] = {
    "closed",
    "half_open",
    "open",
}


def check_breaker_state_enum(value: str) -> BreakerStateEnum:
    if value in BREAKER_STATE_ENUM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {BREAKER_STATE_ENUM_VALUES!r}")
