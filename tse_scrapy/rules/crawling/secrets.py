"""Passwords out of sight: every Redis URL a message shows has its password masked.

``rediss://crawler:s3cret@host:6380/0`` is shown ``rediss://crawler:***@host:6380/0``,
``redis://:s3cret@host`` ``redis://:***@host``, and a ``password=`` in the query
``password=***``.  ``mask_secrets`` does the same inside any text (an error
message that quotes a URL).
"""

from __future__ import annotations

import re

MASK = "***"

# scheme://[user][:password]@ : the password runs to the last '@' before the host part.
_CREDENTIALS = re.compile(r"(?P<head>\b[a-z][a-z0-9+.-]*://[^\s:/@]*:)(?P<password>[^\s/]*)(?P<at>@)", re.IGNORECASE)
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&](?:password|pass|pwd)=)(?P<password>[^&#\s]*)", re.IGNORECASE)


def mask_secrets(text: str) -> str:
    """*text* with the password of every URL in it replaced by ``***``."""
    text = _CREDENTIALS.sub(lambda m: m["head"] + MASK + m["at"], text)
    return _QUERY_PASSWORD.sub(lambda m: m["head"] + MASK, text)


def mask_url(url: str | None) -> str:
    """*url* as it may be shown (its password masked); '' for None."""
    return mask_secrets(url or "")
