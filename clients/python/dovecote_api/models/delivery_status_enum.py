from typing import Literal

DeliveryStatusEnum = Literal[
    "acked", "dead_lettered", "delivered", "expired", "held", "leased", "pending", "queued", "retrying", "unroutable"
]

DELIVERY_STATUS_ENUM_VALUES: set[DeliveryStatusEnum] = {
    "acked",
    "dead_lettered",
    "delivered",
    "expired",
    "held",
    "leased",
    "pending",
    "queued",
    "retrying",
    "unroutable",
}


def check_delivery_status_enum(value: str) -> DeliveryStatusEnum:
    if value in DELIVERY_STATUS_ENUM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DELIVERY_STATUS_ENUM_VALUES!r}")
