from typing import Literal

RoomsSubscriptionsListStatus = Literal["active", "disabled", "paused"]

ROOMS_SUBSCRIPTIONS_LIST_STATUS_VALUES: set[RoomsSubscriptionsListStatus] = {
    "active",
    "disabled",
    "paused",
}


def check_rooms_subscriptions_list_status(value: str) -> RoomsSubscriptionsListStatus:
    if value in ROOMS_SUBSCRIPTIONS_LIST_STATUS_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {ROOMS_SUBSCRIPTIONS_LIST_STATUS_VALUES!r}")
