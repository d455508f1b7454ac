from __future__ import annotations

import pytest
from django.conf import settings

from tests.services import IN_CI


def pytest_sessionstart(session: pytest.Session) -> None:
    engine = settings.DATABASES["default"]["ENGINE"]
    if IN_CI and "postgresql" not in engine:
        raise pytest.UsageError(
            f"CI=true needs the real PostgreSQL: DATABASE_URL is not set (engine {engine}). Run `make test`."
        )


@pytest.fixture
def admin_key(db) -> str:  # noqa: ANN001
    from rooms.models import ApiKey

    _, plaintext = ApiKey.issue("admin", is_admin=True)
    return plaintext
