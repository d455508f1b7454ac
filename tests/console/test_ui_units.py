"""The console writes durations and ratios as people read them ("5 days", "50%"), never as raw seconds or
fractions."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import make_room, make_subscription

pytestmark = pytest.mark.django_db


def test_the_breaker_settings_read_in_days_minutes_and_percent(staff_client: Client) -> None:
    subscription = make_subscription(make_room(), breaker_failure_ratio=0.5, breaker_window_s=60,
                                     breaker_disable_after_s=432_000, breaker_probe_delay_ms=500, timeout_ms=10_000)

    html = staff_client.get(f"/subscriptions/{subscription.pk}/").content.decode()

    assert "or 50% of the attempts in 1 min failed" in html
    assert '<dd id="breaker-disables-after">5 days open;' in html
    assert "after 500 ms, 1 s, 2 s, 4 s, 8 s, 16 s…" in html
    assert "<dt>Timeout</dt><dd>10 s</dd>" in html
    assert "432000" not in html and "0.50 of" not in html
