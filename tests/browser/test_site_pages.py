"""The pages around the console, in a real browser: the API docs under the CSP, the 404 page, the icon."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Browsing

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_api_docs_render_with_no_csp_violation(browsing: Browsing) -> None:
    violations: list[str] = []
    browsing.page.on("console", lambda message: violations.append(message.text)
                     if "Content Security Policy" in message.text else None)

    browsing.goto("/api/v1/docs/")

    expect(browsing.page.locator(".swagger-ui .info .title")).to_contain_text("Dovecote API")
    expect(browsing.page.locator(".opblock").first).to_be_visible()
    assert violations == [], violations  # the browsing fixture also fails the test on any console error
