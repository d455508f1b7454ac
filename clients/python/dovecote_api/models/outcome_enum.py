from typing import Literal

OutcomeEnum = Literal["connection_error", "crashed", "failure", "lease_expired", "nacked", "success", "timeout"]

OUTCOME_ENUM_VALUES: set[OutcomeEnum] = {
    "connection_error",
    "crashed",
    "failure",
    "lease_expired",
    "nacked",
    "success",
    "timeout",
}


def check_outcome_enum(value: str) -> OutcomeEnum:
    if value in OUTCOME_ENUM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {OUTCOME_ENUM_VALUES!r}")
