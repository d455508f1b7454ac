"""An error's text as people read it: a receiver's HTML error page reduced to its words, on one line, bounded.

The push transport stores a failed POST's error this way (delivery/transports.py), so an attempt, a
delivery's and a subscription's last error and a dead letter's reason never keep a whole HTML page;
the console shows the same reading of older rows (console/text.py).
"""

from __future__ import annotations

import html
import re

ERROR_CHARS = 300  # an error as stored, and shown in full
MARKUP = re.compile(r"<[a-zA-Z!/]")
INVISIBLE = re.compile(r"<(head|script|style)\b.*?</\1\s*>", re.DOTALL | re.IGNORECASE)
TAG = re.compile(r"<[^>]*>")
SPACE = re.compile(r"\s+")


def readable(error: str, limit: int = ERROR_CHARS) -> str:
    """Return `error` on one line, an HTML part reduced to its text, cut to `limit` characters (… marks a cut).

    "HTTP 501: <!DOCTYPE HTML><html>…<h1>Error response</h1><p>Error code: 501</p>…" reads
    "HTTP 501: Error response · Error code: 501 · Message: Unsupported method ('POST'). · …".
    """
    start = MARKUP.search(error)
    if start is None:
        text = SPACE.sub(" ", error).strip()
    else:
        lead = SPACE.sub(" ", error[:start.start()]).strip()
        text = " ".join(part for part in (lead, " · ".join(page_text(error[start.start():], limit))) if part)
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def page_text(page: str, limit: int) -> list[str]:
    """Return the text pieces of an HTML page in order, each once (a page repeats its title as its heading)."""
    pieces: list[str] = []
    seen: set[str] = set()
    length = 0
    for part in TAG.split(INVISIBLE.sub(" ", page)):
        piece = SPACE.sub(" ", html.unescape(part)).strip()
        if piece and piece not in seen:
            pieces.append(piece)
            seen.add(piece)
            length += len(piece) + 3
            if length > limit:  # enough to fill the limit: the rest would be cut
                break
    return pieces
