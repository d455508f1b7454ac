from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from dovecote.health import healthz

handler404 = "dovecote.api_errors.not_found"

urlpatterns = [
    path("healthz/", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("rooms.urls")),
    path("api/v1/", include("subscriptions.urls")),
    path("api/v1/", include("delivery.urls")),
    path("api/v1/", include("analytics.urls")),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's start-up script as a file: the Content-Security-Policy allows no inline script.
    path("api/v1/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("console.urls")),
]

if settings.DOVECOTE_DEMO:
    from delivery.demo import receiver

    urlpatterns.append(path("demo/receiver/", receiver, name="demo-receiver"))
