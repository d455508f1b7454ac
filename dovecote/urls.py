"""The site's routes: the Django admin, the API and /healthz/ (api/urls.py), the operator console (console/urls.py)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.urls import include, path

handler404 = "api.errors.not_found"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("api.urls")),
    path("", include("console.urls")),
]

if settings.DOVECOTE_DEMO:
    urlpatterns.insert(0, path("demo/", include("demo.urls")))
