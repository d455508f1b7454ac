"""What a browser asks any site for on its own: the icon at /favicon.ico."""

from __future__ import annotations

from django.contrib.staticfiles import finders
from django.http import FileResponse, Http404, HttpRequest
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

FAVICON = "console/favicon.ico"  # static/console/favicon.ico: the Dovecote mark (dovecote.svg) at 16, 32 and 48 px


@require_safe
@cache_control(public=True, max_age=24 * 3600)
def favicon(request: HttpRequest) -> FileResponse:
    """Serve the site's icon from the static files (pages link the SVG; the admin, the API docs and JSON do not)."""
    path = finders.find(FAVICON)
    if not path:
        raise Http404("no favicon among the static files")
    return FileResponse(open(path, "rb"), content_type="image/x-icon")  # FileResponse closes it
