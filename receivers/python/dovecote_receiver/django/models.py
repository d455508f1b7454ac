from __future__ import annotations

from django.db import models
from django.utils import timezone


class InboxMessage(models.Model):
    """A push received and handled: its row commits with the handler's writes, or not at all."""

    webhook_id = models.CharField(max_length=200, primary_key=True, help_text="Dovecote's message id.")
    event_type = models.CharField(max_length=200)
    event_version = models.CharField(max_length=50)
    room = models.CharField(max_length=200)
    correlation_id = models.CharField(max_length=200)
    attempt = models.PositiveIntegerField(help_text="The delivery attempt that was handled.")
    body = models.TextField(help_text="The push as received (JSON).")
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "dovecote_inbox"
        ordering = ["-received_at"]

    def __str__(self) -> str:
        return f"{self.event_type} {self.webhook_id}"
