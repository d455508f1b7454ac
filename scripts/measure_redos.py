"""Measure a publish whose payload meets `"pattern": "^(a+)+$"` with 10,000 characters, beside a plain publish.

Runs the whole web path (Django test client → API → schema validation → outbox) in embedded mode, on
a scratch SQLite file, and prints the median of each (docs/security.md quotes the figures):

    .venv/bin/python scripts/measure_redos.py [--runs 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    runs = parser.parse_args().runs
    scratch = tempfile.mkdtemp(prefix="dovecote-redos-")
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "DOVECOTE_CACHE_URL"):
        os.environ.pop(name, None)
    os.environ.update({"DJANGO_SETTINGS_MODULE": "dovecote.settings", "DOVECOTE_HTTPS": "false",
                       "STOMP_URL": "memory://", "DOVECOTE_SQLITE_PATH": f"{scratch}/measure.sqlite3",
                       "DOVECOTE_LOG_LEVEL": "ERROR", "DOVECOTE_API_RATE": "1000000/min"})
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    import logging

    logging.getLogger("django.request").setLevel(logging.ERROR)  # each refused publish would log a warning
    from django.core.management import call_command
    from django.test import Client

    from rooms.models import ApiKey, EventType, Room

    call_command("migrate", verbosity=0)
    room = Room.objects.create(name="measure")
    EventType.objects.create(room=room, name="plain", version="1", schema={"type": "object"})
    EventType.objects.create(room=room, name="hostile", version="1",
                             schema={"properties": {"name": {"type": "string", "pattern": "^(a+)+$"}}})
    key = ApiKey.issue("measure", is_admin=True)[1]
    client = Client()

    def publish(event_type: str, name: str) -> float:
        body = json.dumps({"event_type": event_type, "event_version": "1", "payload": {"name": name}})
        started = time.perf_counter()
        response = client.post(f"/api/v1/rooms/{room.pk}/messages/", body, content_type="application/json",
                               HTTP_AUTHORIZATION=f"Bearer {key}")
        elapsed = time.perf_counter() - started
        assert response.status_code in (202, 400), response.content
        return elapsed * 1000

    hostile = "a" * 10_000 + "!"
    plain = [publish("plain", hostile) for _ in range(runs)]
    refused = [publish("hostile", hostile) for _ in range(runs)]
    print(f"plain publish (10,000-character string, no pattern): median {statistics.median(plain):.1f} ms")
    print(f"publish against ^(a+)+$ (10,000 characters, refused): median {statistics.median(refused):.1f} ms")
    print(f"difference: {statistics.median(refused) - statistics.median(plain):+.1f} ms over {runs} runs each")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
