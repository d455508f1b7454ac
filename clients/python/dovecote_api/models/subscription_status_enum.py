from typing import Literal

SubscriptionStatusEnum = Literal["active", "disabled", "paused"]

SUBSCRIPTION_STATUS_ENUM_VALUES: set[SubscriptionStatusEnum] = {
    "active",
    "disabled",
    "paused",
}


def check_subscription_status_enum(value: str) -> SubscriptionStatusEnum:
    if value in SUBSCRIPTION_STATUS_ENUM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SUBSCRIPTION_STATUS_ENUM_VALUES!r}")
