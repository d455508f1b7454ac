"""The pages around the console, in a real browser: the API docs under the CSP, the 404 page, the icon."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Browsing

if TYPE_CHECKING:
    from django.contrib.auth.models import User

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_api_docs_render_with_no_csp_violation(browsing: Browsing) -> None:
    violations: list[str] = []
    browsing.page.on("console", lambda message: violations.append(message.text)
                     if "Content Security Policy" in message.text else None)

    browsing.goto("/api/v1/docs/")

    expect(browsing.page.locator(".swagger-ui .info .title")).to_contain_text("Dovecote API")
    expect(browsing.page.locator(".opblock").first).to_be_visible()
    assert violations == [], violations  # the browsing fixture also fails the test on any console error


def test_an_unknown_page_is_styled_and_leads_back_to_the_dashboard(browsing: Browsing, owner: User) -> None:
    browsing.log_in("owner", "owner-pass-1")
    page = browsing.page

    response = browsing.goto("/rooms/999999/")
    browsing.problems.seen.clear()  # the 404 itself is what this test asks for

    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", name="Page not found")).to_be_visible()
    background = page.locator("#error-page").evaluate("e => getComputedStyle(e).backgroundColor")
    assert background == "rgb(255, 255, 255)", background  # the console's panel: its stylesheet applied
    page.get_by_role("link", name="Back to the dashboard").click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()


def test_the_favicon_answers_200_with_an_icon(browsing: Browsing) -> None:
    response = browsing.page.request.get(browsing.base_url + "/favicon.ico")

    assert response.status == 200 and response.headers["content-type"] == "image/x-icon"
    assert response.body()[:4] == b"\x00\x00\x01\x00"
