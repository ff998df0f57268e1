"""Passwords out of sight: every Redis URL a message shows has its password masked.

``rediss://crawler:s3cret@host:6380/0`` is shown ``rediss://crawler:***@host:6380/0``,
``redis://:s3cret@host`` ``redis://:***@host``, and a ``password=`` in the query
``password=***``.  ``mask_secrets`` does the same inside any text (an error
message that quotes a URL); ``shown_message`` also percent-encodes the text's
control characters, so that what an archive, a page or a PDF says, quoted in
a message, cannot drive the terminal it is printed on.
"""

from __future__ import annotations

import re

from .progress import shown_url

MASK = "***"

# scheme://[user][:password]@ : the password runs to the last '@' before the host part.  A scheme starts
# after no letter or digit and is at most 64 characters long, so that text of letters and dots ("a.a.a.",
# a URL of megabytes) is tried from each place a bounded way: linear time (unbounded, quadratic).
_CREDENTIALS = re.compile(
    r"(?P<head>(?<![a-z0-9])[a-z][a-z0-9+.-]{0,63}://[^\s:/@]*:)(?P<password>[^\s/]*)(?P<at>@)", re.IGNORECASE
)
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&](?:password|pass|pwd)=)(?P<password>[^&#\s]*)", re.IGNORECASE)


def mask_secrets(text: str, mask: str = MASK) -> str:
    """*text* with the password of every URL in it replaced by *mask*; with ``""``, left out, a
    userinfo's colon too (``http://user@host/``: a URL that still names its user, for a ``<base>``)."""
    text = _CREDENTIALS.sub(lambda m: (m["head"] if mask else m["head"][:-1]) + mask + m["at"], text)
    return _QUERY_PASSWORD.sub(lambda m: m["head"] + mask, text)


def mask_url(url: str | None, mask: str = MASK) -> str:
    """*url* as it may be shown (its password masked, or left out with ``""``); '' for None."""
    return mask_secrets(url or "", mask)


def shown_message(text: str) -> str:
    """*text* as a terminal may be shown it: passwords masked, control characters (C0, DEL, C1)
    percent-encoded as the progress log encodes a URL's (``ESC[2J`` -> ``%1B[2J``)."""
    return shown_url(mask_secrets(text))
