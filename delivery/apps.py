from __future__ import annotations

from django.apps import AppConfig


class DeliveryConfig(AppConfig):
    name = "delivery"

    def ready(self) -> None:
        from celery.signals import worker_ready, worker_shutting_down

        from delivery import outbox
        from delivery.push import claims, engine
        from dovecote import lookups, tracing  # noqa: F401 - lookups registers `field__any_of` (claims.py)

        # Tracing starts in every process that loads Django, when OTEL_* variables ask for it.
        tracing.configure()

        # Deliveries the outbox relay has just queued get a push session at once.
        outbox.on_queued(claims.start_sessions_for_deliveries)
        # A warm shutdown: sessions finish the POSTs under way, the rest of their frames go back.
        # Every worker runs an engine from the start, so it joins hot subscriptions (delivery/push/claims.py).
        worker_ready.connect(lambda **_: engine.engine(), weak=False)
        worker_shutting_down.connect(lambda **_: engine.stop_engine(timeout=60), weak=False)
