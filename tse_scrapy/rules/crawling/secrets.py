"""Passwords out of sight: every Redis URL a message shows has its password masked.

``rediss://crawler:s3cret@host:6380/0`` is shown ``rediss://crawler:***@host:6380/0``,
``redis://:s3cret@host`` ``redis://:***@host``, and a ``password=`` in the query
``password=***`` (and so a ``token=``, an ``api_key=``: QUERY_SECRET_NAMES).
``mask_secrets`` does the same inside any text (an error message that quotes a
URL); ``shown_message`` also percent-encodes the text's control characters, so
that what an archive, a page or a PDF says, quoted in a message, cannot drive
the terminal it is printed on.
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
# A query parameter holding a secret, by the names sites and APIs give them (a tester found
# ``token=`` and ``api_key=`` shown on a results page), any of their characters percent-encoded too
# (``pass%77ord=``: a server decodes the name).
QUERY_SECRET_NAMES = (
    "password|passwd|pass|pwd|secret|client_secret|token|access_token|refresh_token|id_token|auth_token"
    "|api_key|apikey|api-key|private_token|x-amz-signature|x-amz-credential|x-amz-security-token"
)


def _spelled_any_way(name: str) -> str:
    """A regular expression of *name* (matched in any case) with any of its characters percent-encoded."""
    pieces = []
    for character in name:
        encoded = sorted({f"%{ord(form):02x}" for form in (character.lower(), character.upper())})
        pieces.append(f"(?:{re.escape(character)}|{'|'.join(encoded)})")
    return "".join(pieces)


_SECRET_NAME = "|".join(map(_spelled_any_way, QUERY_SECRET_NAMES.split("|")))
_QUERY_PASSWORD = re.compile(rf"(?P<head>[?&](?:{_SECRET_NAME})=)(?P<password>[^&#\s]*)", re.IGNORECASE)
# What ends a URL quoted in a message rather than its query's password, when it comes last, before a space:
# "...?password=s3cret: connection refused" keeps its ": " (the mask ate it), "('...?password=x'), " its
# quote, bracket and comma: closing marks and at most one separator; "hunter2!! refused" is masked whole
# (it showed "***!!", the password's end: a review's find).  (At the end of the text, a URL shown alone,
# it is masked with the rest.)
_CLOSING, _SEPARATORS = ")]}>'\"", ":;,."
_PUNCTUATION = _CLOSING + _SEPARATORS + "!?"


def mask_secrets(text: str, mask: str = MASK) -> str:
    """*text* with the password of every URL in it replaced by *mask*; with ``""``, left out, a
    userinfo's colon too (``http://user@host/``: a URL that still names its user, for a ``<base>``)."""
    # Each pattern needs a character most texts lack (tried at every character, they were 2.7 % of a
    # search's instructions, masking 30 URLs a page of results): looked for first.
    if "@" in text:
        text = _CREDENTIALS.sub(lambda m: (m["head"] if mask else m["head"][:-1]) + mask + m["at"], text)
    if "=" in text:
        text = _QUERY_PASSWORD.sub(lambda m: m["head"] + _masked_query_password(m, mask), text)
    return text


def _masked_query_password(found: re.Match[str], mask: str) -> str:
    """The mask for a query's password, and the closing marks and separator ending it when a space
    follows: the message's (a ``&`` or ``#`` after it, or the end of the text: the
    password's).  A password of those alone is masked whole."""
    password = found["password"]
    if not found.string[found.end() : found.end() + 1].isspace():
        return mask
    # From the end, closing marks, one separator, closing marks: read back to where they stop (linear;
    # a regular expression anchored at the end would try every start).
    end = len(password.rstrip(_CLOSING))
    if end and password[end - 1] in _SEPARATORS:
        end -= 1
    kept = password[:end].rstrip(_CLOSING)
    if not kept.strip(_PUNCTUATION):
        return mask
    return mask + password[len(kept) :]


def mask_url(url: str | None, mask: str = MASK) -> str:
    """*url* as it may be shown (its password masked, or left out with ``""``); '' for None."""
    return mask_secrets(url or "", mask)


def shown_message(text: str) -> str:
    """*text* as a terminal may be shown it: passwords masked, control characters (C0, DEL, C1)
    percent-encoded as the progress log encodes a URL's (``ESC[2J`` -> ``%1B[2J``)."""
    return shown_url(mask_secrets(text))
