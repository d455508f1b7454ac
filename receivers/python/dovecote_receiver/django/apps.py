from __future__ import annotations

from django.apps import AppConfig


class DovecoteReceiverConfig(AppConfig):
    name = "dovecote_receiver.django"
    label = "dovecote_receiver"
    verbose_name = "Dovecote push inbox"
