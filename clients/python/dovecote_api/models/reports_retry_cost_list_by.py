from typing import Literal

ReportsRetryCostListBy = Literal["room", "subscription"]

REPORTS_RETRY_COST_LIST_BY_VALUES: set[ReportsRetryCostListBy] = {
    "room",
    "subscription",
}


def check_reports_retry_cost_list_by(value: str) -> ReportsRetryCostListBy:
    if value in REPORTS_RETRY_COST_LIST_BY_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {REPORTS_RETRY_COST_LIST_BY_VALUES!r}")
