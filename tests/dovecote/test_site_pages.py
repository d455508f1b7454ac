"""The pages every site has: a styled 404 and 500 with a way back, and an icon at /favicon.ico."""

from __future__ import annotations

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.views.defaults import server_error

pytestmark = pytest.mark.django_db


def test_an_unknown_page_answers_a_styled_404_with_a_link_home(client: Client) -> None:
    response = client.get("/no/such/page/")

    html = response.content.decode()
    assert response.status_code == 404
    assert 'href="/static/console/ui.css"' in html and "<h1>Page not found</h1>" in html
    assert '<a class="button primary" href="/" id="home-link">' in html and "/no/such/page/" in html


def test_an_unknown_api_path_still_answers_json(client: Client) -> None:
    response = client.get("/api/v1/nowhere/")
    assert response.status_code == 404 and response.json() == {"detail": "no API endpoint at /api/v1/nowhere/"}


def test_the_500_page_renders_without_the_database_or_the_request() -> None:
    with CaptureQueriesContext(connection) as queries:
        html = render_to_string("500.html")  # what Django's server_error does: no request, no context processors
        response = server_error(RequestFactory().get("/"))

    assert not queries.captured_queries
    assert response.status_code == 500 and "Something went wrong" in response.content.decode()
    assert 'href="/static/console/ui.css"' in html and 'href="/" id="home-link"' in html


def test_the_favicon_is_served_as_an_icon(client: Client) -> None:
    response = client.get("/favicon.ico")

    body = b"".join(response.streaming_content)
    assert response.status_code == 200 and response["Content-Type"] == "image/x-icon"
    assert body[:4] == b"\x00\x00\x01\x00"  # an ICO header
    assert "max-age=86400" in response["Cache-Control"]
