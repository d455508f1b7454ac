from __future__ import annotations

from django.urls import path

from api.analytics import views

urlpatterns = [
    path("reports/hourly/", views.HourlyView.as_view(), name="report-hourly"),
    path("reports/latency/", views.LatencyView.as_view(), name="report-latency"),
    path("reports/errors/", views.ErrorsView.as_view(), name="report-errors"),
    path("reports/retry-cost/", views.RetryCostView.as_view(), name="report-retry-cost"),
    path("reports/endpoints/", views.SlowestEndpointsView.as_view(), name="report-endpoints"),
    path("reports/runs/", views.RunsView.as_view(), name="report-runs"),
]
