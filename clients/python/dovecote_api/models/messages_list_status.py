from typing import Literal

MessagesListStatus = Literal[
    "acked", "dead_lettered", "delivered", "expired", "held", "leased", "pending", "queued", "retrying", "unroutable"
]

MESSAGES_LIST_STATUS_VALUES: set[MessagesListStatus] = {
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


def check_messages_list_status(value: str) -> MessagesListStatus:
    if value in MESSAGES_LIST_STATUS_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {MESSAGES_LIST_STATUS_VALUES!r}")
