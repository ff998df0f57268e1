"""The languages a browser asks for (``Accept-Language``, RFC 9110 12.5.4), best first.

``fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5`` is ``["fr", "en", "de"]``: each tag as its
ISO 639 code (``analysis.language_code``: ``fr-CH`` is ``fr``), in the order of their weights (the
order written among equals), each once, at its first place; ``*``, a weight of 0 and a tag of no
language left out.  A header from outside is bounded: its first MAX_HEADER characters, its first
MAX_LANGUAGES tags; what cannot be read is left out, never an error.
"""

from __future__ import annotations

import re

from .analysis import language_code

MAX_HEADER = 1_000
MAX_LANGUAGES = 20
# A tag and its weight: "en-US", "en-US;q=0.8" (spaces around ";" and "=" as browsers may send them).
_RANGE = re.compile(r"\s*([A-Za-z]{1,8}(?:[-_][A-Za-z0-9]{1,8})*|\*)\s*(?:;\s*q\s*=\s*([0-9](?:\.[0-9]{0,3})?))?\s*")


def preferred_languages(header: str | None) -> list[str]:
    """The ISO 639 codes *header* (an ``Accept-Language`` value, None for none) asks for, best first."""
    if not header:
        return []
    weighed: list[tuple[float, int, str]] = []
    for place, item in enumerate(header[:MAX_HEADER].split(",")[:MAX_LANGUAGES]):
        found = _RANGE.fullmatch(item)
        if found is None or found[1] == "*":
            continue
        weight = float(found[2]) if found[2] is not None else 1.0
        code = language_code(found[1])
        if code is not None and 0 < weight <= 1:
            weighed.append((-weight, place, code))
    return list(dict.fromkeys(code for _, _, code in sorted(weighed)))
