"""Browser tests: Playwright driving Debian's Chromium (never a downloaded browser) against live_server."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import (
    Browser,
    BrowserType,
    ConsoleMessage,
    Page,
    Playwright,
    Request,
    Response,
    expect,
    sync_playwright,
)
from pytest_django.live_server_helper import LiveServer

from tests.services import missing_service

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
VIEWPORT = {"width": 1280, "height": 800}
SCREENSHOTS = os.environ.get("SCREENSHOTS") == "1"
SCREENSHOT_DIR = Path(__file__).resolve().parents[2] / "docs" / "screenshots"

expect.set_options(timeout=15_000)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Launch the Debian package's Chromium headless; `make test` installs it (scripts/test-tools.sh)."""
    if not CHROMIUM.exists():
        missing_service("Chromium", f"{CHROMIUM} is missing (apt-get install chromium)")
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM), "headless": True, "args": CHROMIUM_ARGS}


# Playwright's sync API leaves its event loop marked as running on the main thread while it is
# started, and Django refuses ORM calls there. These fixtures scope Playwright to this package, so
# it stops when the browser tests end, and allow the ORM in between (DJANGO_ALLOW_ASYNC_UNSAFE).
@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as started:
        yield started
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(scope="package")
def browser_context_args() -> dict[str, Any]:
    """Every page at 1280×800, the screenshots' size (pytest-playwright's own version needs Playwright first)."""
    return {"viewport": VIEWPORT}


@pytest.fixture(scope="package")
def browser_type(playwright: Playwright, browser_name: str) -> BrowserType:
    return getattr(playwright, browser_name)


@pytest.fixture(scope="package")
def launch_browser(browser_type_launch_args: dict[str, Any], browser_type: BrowserType) -> Callable[..., Browser]:
    return lambda **options: browser_type.launch(**{**browser_type_launch_args, **options})


@pytest.fixture(scope="package")
def browser(launch_browser: Callable[..., Browser]) -> Iterator[Browser]:
    started = launch_browser()
    yield started
    started.close()


@dataclass
class Problems:
    """What went wrong in the page: console errors, uncaught exceptions, failed or 4xx/5xx requests."""

    seen: list[str] = field(default_factory=list)

    def console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.seen.append(f"console error: {message.text} ({message.location.get('url', '')})")

    def page_error(self, error: Exception) -> None:
        self.seen.append(f"uncaught: {error}")

    def request_failed(self, request: Request) -> None:
        # Leaving a page cancels what it still loads (a poll, an icon): the browser aborted it, no
        # server or network failed. Any other failure counts.
        if request.failure == "net::ERR_ABORTED":
            return
        self.seen.append(f"request failed: {request.method} {request.url} ({request.failure})")

    def response(self, response: Response) -> None:
        if response.status >= 400:
            self.seen.append(f"HTTP {response.status}: {response.request.method} {response.url}")


@dataclass
class Browsing:
    """A page on the live server, with its problem log and the screenshot switch."""

    page: Page
    base_url: str
    problems: Problems

    def goto(self, path: str) -> Response | None:
        return self.page.goto(self.base_url + path)

    def log_in(self, username: str, password: str) -> None:
        self.goto("/login/")
        self.page.get_by_label("Username").fill(username)
        self.page.get_by_label("Password").fill(password)
        self.page.get_by_role("button", name="Log in").click()
        expect(self.page.get_by_role("heading", name="Dashboard")).to_be_visible()

    def screenshot(self, name: str) -> None:
        """Save the viewport (1280×800) as docs/screenshots/NAME.png when SCREENSHOTS=1."""
        if SCREENSHOTS:
            SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
            self.page.wait_for_load_state("networkidle")
            self.page.screenshot(path=SCREENSHOT_DIR / f"{name}.png")


@pytest.fixture
def browsing(page: Page, live_server: LiveServer) -> Iterator[Browsing]:
    """A browser page on the live server that fails the test on any console error or failed request."""
    problems = Problems()
    page.on("console", problems.console)
    page.on("pageerror", problems.page_error)
    page.on("requestfailed", problems.request_failed)
    page.on("response", problems.response)
    page.set_default_timeout(15_000)
    yield Browsing(page, live_server.url, problems)
    page.remove_listener("console", problems.console)
    if problems.seen:
        pytest.fail("the page reported problems:\n" + "\n".join(problems.seen), pytrace=False)
