from typing import Literal

TypeEnum = Literal["pull", "push"]

TYPE_ENUM_VALUES: set[TypeEnum] = {
    "pull",
    "push",
}


def check_type_enum(value: str) -> TypeEnum:
    if value in TYPE_ENUM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TYPE_ENUM_VALUES!r}")
