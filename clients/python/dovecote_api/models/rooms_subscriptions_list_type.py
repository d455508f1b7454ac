from typing import Literal

RoomsSubscriptionsListType = Literal["pull", "push"]

ROOMS_SUBSCRIPTIONS_LIST_TYPE_VALUES: set[RoomsSubscriptionsListType] = {
    "pull",
    "push",
}


def check_rooms_subscriptions_list_type(value: str) -> RoomsSubscriptionsListType:
    if value in ROOMS_SUBSCRIPTIONS_LIST_TYPE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {ROOMS_SUBSCRIPTIONS_LIST_TYPE_VALUES!r}")
