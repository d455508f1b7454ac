"""Near misses: the known name a client most likely meant when it sent one Dovecote does not know."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def near_miss(name: str, known: Iterable[str]) -> str | None:
    """Return the known name `name` is a near miss of: the same but for case first, else the closest spelling."""
    candidates = list(known)
    folded = name.casefold()
    for candidate in candidates:
        if candidate.casefold() == folded:
            return candidate
    by_folded = {candidate.casefold(): candidate for candidate in candidates}
    closest = difflib.get_close_matches(folded, list(by_folded), n=1, cutoff=0.6)
    return by_folded[closest[0]] if closest else None
