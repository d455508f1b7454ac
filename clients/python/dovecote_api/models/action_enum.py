from typing import Literal

ActionEnum = Literal["dead_letter", "retry"]

ACTION_ENUM_VALUES: set[ActionEnum] = {
    "dead_letter",
    "retry",
}


def check_action_enum(value: str) -> ActionEnum:
    if value in ACTION_ENUM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {ACTION_ENUM_VALUES!r}")
