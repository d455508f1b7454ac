"""Signing in to the operator UI and the Django admin, with failed attempts limited per client address."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.forms import Form
from django.http import HttpResponse

from dovecote.throttling import LOGIN_FAILURES


class FailureLimitedLogin:
    """Refuse sign-ins to an account from an address over DOVECOTE_LOGIN_FAILURE_RATE; count each failed one.

    Counted per (address, user name): strangers failing on other accounts from the same address (or
    through the same proxy) never lock an operator out, while guessing one account's password stays slow.
    """

    request: Any
    data: Any
    error_messages: dict[str, str]

    def clean(self) -> dict[str, Any]:
        account = str(self.data.get("username", ""))[:150]
        if self.request is not None and (wait := LOGIN_FAILURES.seconds_blocked(self.request, account)):
            minutes = -(-wait // 60)
            raise ValidationError(f"Too many failed sign-ins from your address: try again in {minutes} minute(s).",
                                  code="throttled")
        try:
            return super().clean()  # type: ignore[misc]
        except ValidationError:
            if self.request is not None:
                LOGIN_FAILURES.record_failure(self.request, account)
            raise


class LoginForm(FailureLimitedLogin, AuthenticationForm):
    pass


class AdminLoginForm(FailureLimitedLogin, AdminAuthenticationForm):
    pass


class LoginView(auth_views.LoginView):
    """Django's login view with LoginForm; a sign-in refused for too many failures answers 429."""

    authentication_form = LoginForm
    template_name = "console/login.html"
    redirect_authenticated_user = True

    def form_invalid(self, form: Form) -> HttpResponse:
        response = super().form_invalid(form)
        if form.has_error("__all__", "throttled"):
            response.status_code = 429
        return response
