"""Run Dovecote in embedded mode: SQLite, the in-memory broker, and the worker and beat in-process."""

from __future__ import annotations

import os
import threading
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from waitress import serve

from delivery import demo, push
from dovecote import embedded
from dovecote.celery import app
from dovecote.wsgi import application


class Command(BaseCommand):
    help = "Run the whole of Dovecote in this process with demo rooms, subscriptions and traffic."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--rate", type=float, default=3.0, help="Demo events published per second.")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.CELERY_BROKER_URL.startswith("memory://"):
            raise CommandError("the demo runs its worker in-process: unset CELERY_BROKER_URL (make demo does)")
        if not settings.DOVECOTE_DEMO:
            raise CommandError("set DOVECOTE_DEMO=true to serve the demo receiver (make demo does)")
        call_command("migrate", verbosity=0)
        base_url = f"http://{options['host']}:{options['port']}"
        demo.seed(base_url)
        resent = demo.resend_lost_frames()
        password, api_key = demo.fresh_credentials()
        worker = embedded.start_worker(app)
        beat = embedded.start_beat(app)
        stop = threading.Event()
        threading.Thread(target=demo.publish_forever, args=(stop, options["rate"]), daemon=True).start()
        self.stdout.write(f"Dovecote demo on {base_url}/  (embedded: SQLite, in-memory broker, in-process worker)")
        if resent:
            self.stdout.write(f"  sending again {resent} deliveries the in-memory broker lost at the last stop")
        self.stdout.write(f"  login:   admin / {password}\n  API key: {api_key}")
        self.stdout.write("  Ctrl-C stops it; `make demo-reset` starts afresh.")
        try:
            serve(application, host=options["host"], port=options["port"], threads=8, _quiet=True)
        except KeyboardInterrupt:
            pass
        finally:
            stop.set()
            push.stopping.set()
            beat.stop()
            worker.stop(in_sighandler=False)
            self.stdout.write("Dovecote demo stopped.")
