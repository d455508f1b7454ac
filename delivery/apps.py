from __future__ import annotations

from django.apps import AppConfig


class DeliveryConfig(AppConfig):
    name = "delivery"

    def ready(self) -> None:
        from celery.signals import worker_shutting_down

        from delivery import push

        # A warm shutdown waits for running tasks: let push sessions end now instead of at their budget.
        worker_shutting_down.connect(lambda **_: push.stopping.set(), weak=False)
