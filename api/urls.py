"""Every route programs call: the REST API under /api/v1/ (with its schema and docs) and /healthz/."""

from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from api import health
from api.metrics import metrics

urlpatterns = [
    path("healthz/", health.healthz, name="healthz"),
    # Probes are often written without the slash: both forms answer, neither redirects.
    path("healthz/live", health.live, name="healthz-live"),
    path("healthz/live/", health.live),
    path("healthz/ready", health.ready, name="healthz-ready"),
    path("healthz/ready/", health.ready),
    path("metrics", metrics, name="metrics"),
    path("api/v1/", include("api.rooms.urls")),
    path("api/v1/", include("api.subscriptions.urls")),
    path("api/v1/", include("api.delivery.urls")),
    path("api/v1/", include("api.analytics.urls")),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's start-up script as a file: the Content-Security-Policy allows no inline script.
    path("api/v1/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
]
