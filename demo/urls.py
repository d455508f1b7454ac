"""The demo's routes, mounted at /demo/ when DOVECOTE_DEMO is on (make demo)."""

from __future__ import annotations

from django.urls import path

from demo.receiver import receiver

urlpatterns = [path("receiver/", receiver, name="demo-receiver")]
