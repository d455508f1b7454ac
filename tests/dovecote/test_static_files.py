"""Static files in production: collectstatic writes hashed, gzipped files and WhiteNoise serves them.

No view of Django's serves static files: WhiteNoise's middleware does, from STATIC_ROOT (or, for
DEBUG, the demo and this suite, from the finders).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.template import engines
from django.test import Client, override_settings
from django.urls import Resolver404, resolve

PRODUCTION_STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}


@pytest.fixture
def collected(tmp_path: Path):
    with override_settings(STORAGES=PRODUCTION_STORAGES, STATIC_ROOT=tmp_path, WHITENOISE_USE_FINDERS=False,
                           WHITENOISE_AUTOREFRESH=False):
        call_command("collectstatic", "--no-input", verbosity=0)
        yield tmp_path


def test_collectstatic_writes_hashed_and_gzipped_files(collected: Path) -> None:
    manifest = json.loads((collected / "staticfiles.json").read_text())["paths"]
    hashed = manifest["console/ui.css"]
    assert hashed != "console/ui.css" and hashed.startswith("console/ui.") and hashed.endswith(".css")
    assert (collected / hashed).exists() and (collected / f"{hashed}.gz").exists()
    assert "vendor/htmx/htmx.min.js" in manifest


@pytest.mark.django_db
def test_pages_link_the_hashed_names_and_whitenoise_serves_them_for_ever(collected: Path) -> None:
    hashed = json.loads((collected / "staticfiles.json").read_text())["paths"]["console/ui.css"]
    link = engines["django"].from_string("{% load static %}{% static 'console/ui.css' %}").render({})
    assert link == f"/static/{hashed}"

    response = Client().get(link, HTTP_ACCEPT_ENCODING="gzip")

    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert "immutable" in response["Cache-Control"] and "max-age=315360000" in response["Cache-Control"]
    assert Client().get("/static/console/not-collected.css").status_code == 404


def test_no_django_view_serves_static_files() -> None:
    try:
        match = resolve("/static/console/ui.css")
    except Resolver404:
        return
    raise AssertionError(f"/static/ is routed to {match.func}")
