from __future__ import annotations

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"

    def ready(self) -> None:
        from django.contrib import admin

        from console.login import AdminLoginForm

        # The Django admin signs in through the console's form: failed sign-ins limited per address.
        admin.site.login_form = AdminLoginForm
