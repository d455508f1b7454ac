"""The Reports page: the Spark report tables as charts, and the button that asks a worker for a new run."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib import messages
from django.db.models import Max, Subquery, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from analytics import runner
from analytics.models import ArchiveRun, ErrorReport, HourlyReport, LatencyReport, RetryCostReport
from analytics.runs import Progress, Refresh, RunState, report_progress, request_report_run
from console.charts import (
    HOUR,
    BarChart,
    LineChart,
    bar_chart,
    format_ms,
    format_percent,
    line_chart,
    nice_ceiling,
)
from console.forms.reports import ReportFilterForm
from console.shortcuts import query_without, render_page, require_permission, staff_required, wanted_fragment
from rooms.models import Room
from subscriptions.models import Subscription

FRAGMENTS = ("figures", "progress")
POLL_SECONDS = 1
BUSIEST_ROOMS = 8  # latency charts drawn for all rooms (percentiles do not combine across rooms)
TOP_ERRORS = 12
SLOWEST_ENDPOINTS = 10
PERCENTILES = [("p50", "latency_p50_ms"), ("p95", "latency_p95_ms"), ("p99", "latency_p99_ms")]
EXTRA_SENDS = [("retries", "retries"), ("dead letters", "dead_letters"), ("rechecks", "rechecks"),
               ("replays", "replays")]
NOTICES = {
    Refresh.REQUESTED: "Report run requested: it starts when a Celery worker (or run_reports --follow) picks it up.",
    Refresh.IN_PROGRESS: "A report run is already in progress: no second run was started.",
    Refresh.ALREADY_REQUESTED: "A report run is already requested and waiting for a worker.",
    Refresh.UNSUPPORTED: "The report jobs read PostgreSQL: this instance runs on SQLite, so no run was started.",
    Refresh.UNREACHABLE: "The Celery broker did not answer: no run was requested. Try again, or run `make report`.",
}


ARCHIVE_RUNS_SHOWN = 10


@staff_required
@require_GET
def reports(request: HttpRequest) -> TemplateResponse:
    """Show the report charts for the chosen room or subscription, and the report runs' progress."""
    form = ReportFilterForm(request.GET)
    parts = {"figures": lambda: report_figures(form) if form.is_valid() else None, "progress": RunPanel.current,
             "archive_runs": lambda: list(ArchiveRun.objects.all()[:ARCHIVE_RUNS_SHOWN])}
    wanted = wanted_fragment(request, FRAGMENTS)
    context: dict[str, Any] = {name: build() for name, build in parts.items() if wanted in (None, name)}
    if wanted in (None, "figures") and form.is_valid() and context["figures"] is None:
        context["has_reports"] = bool(form.lookups()) and HourlyReport.objects.exists()
        context["reports_supported"] = runner.reports_supported()
    response = render_page(request, "console/reports.html", {
        "section": "reports", "form": form, "filters": query_without(request, "watch"), **context,
    }, fragments=FRAGMENTS)
    if wanted == "progress" and request.GET.get("watch") and context["progress"].state == RunState.SUCCEEDED:
        response["HX-Refresh"] = "true"  # a run the page was following finished: show its figures
    return response


@staff_required
@require_POST
def reports_refresh(request: HttpRequest) -> HttpResponse:
    """Ask a worker for a report run (unless one runs or waits already), then show its progress."""
    require_permission(request, "analytics.add_reportrun")
    outcome = request_report_run(timezone.now())
    if request.htmx:
        return TemplateResponse(request, "console/reports.html#progress",
                                {"progress": RunPanel.current(notice=NOTICES[outcome], requested=outcome)})
    flash = {Refresh.REQUESTED: messages.success, Refresh.UNREACHABLE: messages.error}.get(outcome, messages.info)
    flash(request, NOTICES[outcome])
    filters = query_without(request, "watch")
    return redirect(reverse("console:reports") + (f"?{filters}" if filters else ""))


@dataclass(frozen=True)
class RunPanel:
    """The progress panel: the report runs' state, with the times worked out for display."""

    progress: Progress
    now: datetime
    notice: str = ""
    requested: Refresh | None = None

    @classmethod
    def current(cls, **extra: Any) -> RunPanel:
        now = timezone.now()
        return cls(report_progress(now), now, **extra)

    @property
    def state(self) -> RunState:
        return self.progress.state

    @property
    def run(self) -> Any:
        return self.progress.run

    @property
    def poll_seconds(self) -> int | None:
        return POLL_SECONDS if self.progress.is_live else None

    @property
    def duration(self) -> str:
        return format_ms(self.run.duration(self.now).total_seconds() * 1000) if self.run else ""

    @property
    def waited(self) -> str:
        waited = self.now - self.progress.requested_at if self.progress.requested_at else timedelta()
        return format_ms(waited.total_seconds() * 1000)

    @property
    def silent(self) -> str:
        """How long ago a run last wrote its heartbeat."""
        beat = self.run.heartbeat_at if self.run else None
        return format_ms((self.now - beat).total_seconds() * 1000) if beat else "long"


# ---- the figures ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Names:
    """Room and subscription names for the ids in the report rows (the rows keep ids of deleted ones)."""

    rooms: dict[int, str]
    subscriptions: dict[int, dict[str, Any]]

    @classmethod
    def load(cls, room_ids: Iterable[int], subscription_ids: Iterable[int]) -> Names:
        rooms = dict(Room.objects.filter(pk__in=set(room_ids)).values_list("pk", "name"))
        subscriptions = {row["pk"]: row for row in Subscription.objects.filter(pk__in=set(subscription_ids))
                         .values("pk", "name", "push_url", "room__name")}
        return cls(rooms, subscriptions)

    def room(self, room_id: int) -> str:
        return self.rooms.get(room_id, f"room {room_id} (deleted)")

    def subscription(self, subscription_id: int | None) -> str:
        found = self.subscriptions.get(subscription_id)
        return f"{found['room__name']} / {found['name']}" if found else f"subscription {subscription_id} (deleted)"


@dataclass(frozen=True)
class Figures:
    """The Reports page's figures for one selection: a window of hours up to the newest report hour."""

    start: datetime
    end: datetime
    hours: int
    success: Success
    latency: list[Latency]
    per_room: bool  # all rooms: a latency chart per room, for the busiest
    errors: Errors
    endpoints: list[dict[str, Any]]
    retry_cost: RetryCost


def report_figures(form: ReportFilterForm) -> Figures | None:
    """Build every chart of the page for the form's selection (one query each), or None with no report rows."""
    lookups = form.lookups()
    newest = HourlyReport.objects.filter(**lookups).aggregate(newest=Max("hour"))["newest"]
    if newest is None:
        return None
    end = newest + HOUR
    start = end - form.hours * HOUR
    hours = [start + i * HOUR for i in range(form.hours)]
    window = {**lookups, "hour__gte": start, "hour__lt": end}
    by = "subscription_id" if "subscription_id" in lookups else "room_id"
    settled = list(HourlyReport.objects.filter(**window).settled("hour"))
    latency = latency_rows(window, by)
    errors = list(ErrorReport.objects.filter(**window).values("outcome", "status_code")
                  .annotate(failed=Sum("failed_attempts")).order_by("-failed", "outcome", "status_code")[:TOP_ERRORS])
    endpoints = list(LatencyReport.objects.filter(**window).slowest_endpoints()[:SLOWEST_ENDPOINTS])
    cost_by = "room_id" if not lookups else "subscription_id"
    cost = list(RetryCostReport.objects.filter(**window).totals(cost_by).order_by("-retries", cost_by))
    names = Names.load([row["room_id"] for row in [*latency, *cost] if "room_id" in row],
                       [row["subscription_id"] for row in [*latency, *endpoints, *cost] if row.get("subscription_id")])
    charts = latency_charts(hours, latency, by, names)
    return Figures(start, end, form.hours, success_figures(hours, settled), charts, not lookups,
                   error_figures(errors), endpoint_rows(endpoints, names), retry_cost_figures(cost, cost_by, names))


@dataclass(frozen=True)
class Success:
    chart: LineChart
    hours: list[dict[str, Any]]  # per hour: delivered, dead_lettered, expired, success_rate
    delivered: int
    dead_lettered: int
    expired: int
    rate: str  # over the window, as a percentage
    worst: dict[str, Any] | None  # the hour with the lowest success rate


def success_figures(hours: list[datetime], rows: list[dict[str, Any]]) -> Success:
    """Chart the success rate per hour, from the settled outcomes summed per hour."""
    chart = line_chart(hours, [("success rate", "success", {row["hour"]: row["success_rate"] for row in rows})],
                       1.0, format_percent)
    totals = {name: sum(row[name] for row in rows) for name in ("delivered", "dead_lettered", "expired")}
    settled = sum(totals.values())
    rated = [row for row in rows if row["success_rate"] is not None]
    for row in rows:
        row["success_percent"] = format_percent(row["success_rate"]) if row["success_rate"] is not None else "—"
    worst = min(rated, key=lambda row: (row["success_rate"], row["hour"])) if rated else None
    return Success(chart, rows, **totals, rate=format_percent(totals["delivered"] / settled) if settled else "—",
                   worst=worst)


@dataclass(frozen=True)
class Latency:
    name: str
    chart: LineChart
    hours: list[dict[str, Any]]  # per hour with deliveries: delivered, latency_p50_ms, _p95_ms, _p99_ms
    delivered: int
    latest: dict[str, Any] | None  # the newest hour with a latency
    worst: dict[str, Any] | None  # the hour with the highest p99


def latency_rows(window: dict[str, Any], by: str) -> list[dict[str, Any]]:
    """Read the latency percentiles per hour at the selection's level (no averaging of percentiles).

    A subscription reads its `subscription` rows, a room its `room` rows; all rooms read the
    `room` rows of the busiest rooms, each drawn on its own.
    """
    level = LatencyReport.Level.SUBSCRIPTION if by == "subscription_id" else LatencyReport.Level.ROOM
    rows = LatencyReport.objects.filter(level=level, **window)
    if "room_id" not in window:
        busiest = (LatencyReport.objects.filter(level=level, **window).values("room_id")
                   .annotate(delivered_sum=Sum("delivered")).order_by("-delivered_sum", "room_id")
                   .values("room_id")[:BUSIEST_ROOMS])
        rows = rows.filter(room_id__in=Subquery(busiest))
    return list(rows.order_by(by, "hour").values(by, "hour", "delivered", *(field for _, field in PERCENTILES)))


def latency_charts(hours: list[datetime], rows: list[dict[str, Any]], by: str, names: Names) -> list[Latency]:
    """Chart p50, p95 and p99 per hour for each room or subscription in the rows, busiest first."""
    grouped: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[row[by]].append(row)
    charts = []
    for key, group in grouped.items():
        top = nice_ceiling(max((row["latency_p99_ms"] or 0 for row in group), default=0))
        lines = [(name, name, {row["hour"]: row[field] for row in group}) for name, field in PERCENTILES]
        timed = [row for row in group if row["latency_p99_ms"] is not None]
        charts.append(Latency(
            names.subscription(key) if by == "subscription_id" else names.room(key),
            line_chart(hours, lines, top, format_ms), group, sum(row["delivered"] for row in group),
            timed[-1] if timed else None, max(timed, key=lambda row: row["latency_p99_ms"]) if timed else None,
        ))
    return sorted(charts, key=lambda chart: -chart.delivered)


@dataclass(frozen=True)
class Errors:
    chart: BarChart
    rows: list[dict[str, Any]]  # outcome, status_code, failed, label
    total: int


def error_figures(rows: list[dict[str, Any]]) -> Errors:
    """Chart the failed attempts by outcome and HTTP status code, most first."""
    for row in rows:
        row["label"] = error_label(row["outcome"], row["status_code"])
    chart = bar_chart([(row["label"], [("failed attempts", "error", row["failed"])]) for row in rows],
                      width=460, label_width=120)  # a half-width panel: text stays legible
    return Errors(chart, rows, sum(row["failed"] for row in rows))


def error_label(outcome: str, status_code: int | None) -> str:
    if status_code is not None:
        return f"HTTP {status_code}"
    return outcome.replace("_", " ")


def endpoint_rows(rows: list[dict[str, Any]], names: Names) -> list[dict[str, Any]]:
    for row in rows:
        row["name"] = names.subscription(row["subscription_id"])
        row["exists"] = row["subscription_id"] in names.subscriptions
        row["push_url"] = names.subscriptions.get(row["subscription_id"], {}).get("push_url")
    return rows


@dataclass(frozen=True)
class RetryCost:
    by: str  # "room" or "subscription"
    chart: BarChart
    rows: list[dict[str, Any]]  # the summed figures, with name, extra sends and retries per publish


def retry_cost_figures(rows: list[dict[str, Any]], by: str, names: Names) -> RetryCost:
    """Chart the sends each room (or subscription) made beyond its first publishes, by kind."""
    for row in rows:
        row["name"] = names.room(row[by]) if by == "room_id" else names.subscription(row[by])
        row["extra_sends"] = sum(row[field] for _, field in EXTRA_SENDS)
        row["retries_per_publish"] = row["retries"] / row["publishes"] if row["publishes"] else None
        row["mean_retry_delay"] = format_ms(row["retry_delay_ms"] / row["retries"]) if row["retries"] else "—"
    chart = bar_chart([(row["name"], [(name, field.replace("_", "-"), row[field]) for name, field in EXTRA_SENDS])
                       for row in rows])
    return RetryCost(by.removesuffix("_id"), chart, rows)


# ---- the dashboard's panel -----------------------------------------------------------------------

@dataclass(frozen=True)
class RoomSuccess:
    room_id: int
    name: str
    exists: bool  # report rows outlive a deleted room
    chart: LineChart  # a sparkline: no axes
    rate: str  # over the whole window, as a percentage
    settled: int


@dataclass(frozen=True)
class RoomsPanel:
    end: datetime | None  # the end of the newest report hour; None before the first report
    hours: int
    rooms: list[RoomSuccess]
    supported: bool = True  # whether the report jobs can run here (not on the demo's SQLite)


def success_per_room(hours: int = 24, limit: int = BUSIEST_ROOMS) -> RoomsPanel:
    """Chart the success rate per hour of the busiest rooms over the newest report hours (three queries)."""
    newest = HourlyReport.objects.aggregate(newest=Max("hour"))["newest"]
    if newest is None:
        return RoomsPanel(None, hours, [], runner.reports_supported())
    end = newest + HOUR
    window = HourlyReport.objects.filter(hour__gte=end - hours * HOUR, hour__lt=end)
    busiest = (window.values("room_id").annotate(n=Sum("delivered") + Sum("dead_lettered") + Sum("expired"))
               .order_by("-n", "room_id").values("room_id")[:limit])
    grouped: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in window.filter(room_id__in=Subquery(busiest)).settled("room_id", "hour"):
        grouped[row["room_id"]].append(row)
    names = Names.load(grouped, [])
    span = [end - (hours - i) * HOUR for i in range(hours)]
    rooms = []
    for room_id, rows in grouped.items():
        delivered, settled = (sum(row["delivered"] for row in rows),
                              sum(row["delivered"] + row["dead_lettered"] + row["expired"] for row in rows))
        chart = line_chart(span, [("success rate", "success", {row["hour"]: row["success_rate"] for row in rows})],
                           1.0, format_percent, width=240, height=40, axes=False)
        rate = format_percent(delivered / settled) if settled else "—"
        rooms.append(RoomSuccess(room_id, names.room(room_id), room_id in names.rooms, chart, rate, settled))
    return RoomsPanel(end, hours, sorted(rooms, key=lambda room: (-room.settled, room.name)))
