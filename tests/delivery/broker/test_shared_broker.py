"""The process's shared broker connection survives a failed attempt to switch it to another URL."""

from __future__ import annotations

import pytest
from django.test import override_settings

from delivery.broker import BrokerUnavailable
from delivery.broker.shared import shared_broker


def test_after_a_failed_switch_to_an_unreachable_broker_the_next_call_connects_again(live_services) -> None:
    shared_broker()
    with override_settings(STOMP_URL="stomp://admin:admin@127.0.0.1:1"), pytest.raises(BrokerUnavailable):
        shared_broker()
    broker = shared_broker()
    assert broker.is_connected()
    broker.consumer("room-0::subscription-0", prefetch=1).close()
