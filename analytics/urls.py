from __future__ import annotations

from django.urls import path

from analytics import api

urlpatterns = [
    path("reports/hourly/", api.HourlyView.as_view(), name="report-hourly"),
    path("reports/latency/", api.LatencyView.as_view(), name="report-latency"),
    path("reports/errors/", api.ErrorsView.as_view(), name="report-errors"),
    path("reports/retry-cost/", api.RetryCostView.as_view(), name="report-retry-cost"),
    path("reports/endpoints/", api.SlowestEndpointsView.as_view(), name="report-endpoints"),
    path("reports/runs/", api.RunsView.as_view(), name="report-runs"),
]
