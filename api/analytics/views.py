"""GET /api/v1/reports/…: the report tables as JSON, scoped to the rooms the API key may use."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, generics, pagination, serializers

from analytics.models import ErrorReport, HourlyReport, LatencyReport, ReportRun, RetryCostReport
from api.analytics.serializers import (
    EndpointSerializer,
    ErrorFilters,
    ErrorReportRowSerializer,
    HourlyFilters,
    HourlySerializer,
    LatencyFilters,
    LatencySerializer,
    ReportFilters,
    RetryCostFilters,
    RetryCostSerializer,
    RunSerializer,
)
from api.auth import api_key
from api.errors import error_responses
from api.lists import read_filters
from subscriptions.models import Subscription


class ReportPages(pagination.PageNumberPagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


class ReportView(generics.ListAPIView):
    """A report table, oldest hour first, filtered by the query string and the key's rooms."""

    pagination_class = ReportPages
    filters_class: type[serializers.Serializer] = ReportFilters
    lookups = {"room": "room_id", "subscription": "subscription_id", "since": "hour__gte", "until": "hour__lt"}

    def rows(self) -> QuerySet:
        raise NotImplementedError

    def filters(self) -> dict[str, Any]:
        return read_filters(self.filters_class, self.request)

    def get_queryset(self) -> QuerySet:
        given = self.filters()
        rows = scoped_to_key(self.request, self.rows(), given.get("room"))
        return rows.filter(**{self.lookups[name]: value for name, value in given.items() if name in self.lookups})


def scoped_to_key(request: Any, rows: QuerySet, room: int | None) -> QuerySet:
    """Keep the rows of the rooms the request's key may use; naming another room is a 403."""
    key = api_key(request)
    if room is not None and not key.can_use_room(room):
        raise exceptions.PermissionDenied(f"this API key has no rights on room {room}")
    return rows if key.is_admin else rows.filter(room_id__in=key.rooms.values("pk"))


@extend_schema(parameters=[HourlyFilters],
               responses={200: HourlySerializer(many=True), **error_responses(400, 403, 404)})
class HourlyView(ReportView):
    """Published, delivered, failed, retried, dead-lettered and expired per room, subscription, event type, hour."""

    serializer_class = HourlySerializer
    filters_class = HourlyFilters
    lookups = {**ReportView.lookups, "event_type": "event_type"}

    def rows(self) -> QuerySet:
        return HourlyReport.objects.order_by("hour", "key")


@extend_schema(parameters=[LatencyFilters],
               responses={200: LatencySerializer(many=True), **error_responses(400, 403, 404)})
class LatencyView(ReportView):
    """Delivery latency and attempt duration p50/p95/p99 per hour, per room, subscription or event type."""

    serializer_class = LatencySerializer
    filters_class = LatencyFilters
    lookups = {**ReportView.lookups, "event_type": "event_type", "level": "level"}

    def rows(self) -> QuerySet:
        return LatencyReport.objects.order_by("hour", "key")


@extend_schema(parameters=[ErrorFilters],
               responses={200: ErrorReportRowSerializer(many=True), **error_responses(400, 403, 404)})
class ErrorsView(ReportView):
    """Failed attempts per subscription and hour, by outcome (the error class) and HTTP status code."""

    serializer_class = ErrorReportRowSerializer
    filters_class = ErrorFilters
    lookups = {**ReportView.lookups, "outcome": "outcome", "status_code": "status_code"}

    def rows(self) -> QuerySet:
        return ErrorReport.objects.order_by("hour", "key")


@extend_schema(parameters=[RetryCostFilters],
               responses={200: RetryCostSerializer(many=True), **error_responses(400, 403, 404)})
class RetryCostView(ReportView):
    """Sends of each kind and redelivery attempts per hour, per room (default) or subscription."""

    serializer_class = RetryCostSerializer
    filters_class = RetryCostFilters

    def rows(self) -> QuerySet:
        return RetryCostReport.objects.all()

    def get_queryset(self) -> QuerySet:
        grain = ["hour", "room_id"] if self.filters()["by"] == "room" else ["hour", "room_id", "subscription_id"]
        return super().get_queryset().totals(*grain)


@extend_schema(parameters=[ReportFilters],
               responses={200: EndpointSerializer(many=True), **error_responses(400, 403, 404)})
class SlowestEndpointsView(ReportView):
    """Subscriptions by their worst hourly attempt duration p95 over the window, slowest first.

    Percentiles do not add up across hours, so each figure is the worst hour's (and the attempts the total).
    """

    serializer_class = EndpointSerializer

    def rows(self) -> QuerySet:
        return LatencyReport.objects.all()

    def get_queryset(self) -> QuerySet:
        return super().get_queryset().slowest_endpoints()

    def paginate_queryset(self, queryset: QuerySet) -> list[dict[str, Any]] | None:
        page = super().paginate_queryset(queryset)
        names = {s.pk: s for s in Subscription.objects.filter(pk__in=[row["subscription_id"] for row in page or []])}
        for row in page or []:
            subscription = names.get(row["subscription_id"])  # None once the subscription is deleted
            row["name"] = subscription.name if subscription else None
            row["push_url"] = subscription.push_url if subscription else None
        return page


@extend_schema(responses={200: RunSerializer(many=True), **error_responses(404)})
class RunsView(generics.ListAPIView):
    """Report runs, newest first (one asked for and not yet started too): status, progress, scope, the rows written."""

    serializer_class = RunSerializer
    pagination_class = ReportPages

    def get_queryset(self) -> QuerySet[ReportRun]:
        return ReportRun.objects.order_by("-id")

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "internals": api_key(self.request).is_admin}
