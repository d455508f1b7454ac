from typing import Literal

ReportsLatencyListLevel = Literal["event_type", "room", "subscription"]

REPORTS_LATENCY_LIST_LEVEL_VALUES: set[ReportsLatencyListLevel] = {
    "event_type",
    "room",
    "subscription",
}


def check_reports_latency_list_level(value: str) -> ReportsLatencyListLevel:
    if value in REPORTS_LATENCY_LIST_LEVEL_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {REPORTS_LATENCY_LIST_LEVEL_VALUES!r}")
