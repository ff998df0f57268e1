"""Character references decoded as ``html.unescape`` decodes them, whatever their length.

``html.unescape`` reads a decimal reference's digits with ``int``, which refuses more than 4,300 of
them (Python's guard against quadratic conversions, CVE-2020-10735): a page holding ``&#`` and 5,000
digits made ``tse index`` stop with a traceback.  Such a reference is decoded as ``html.unescape``
would decode it without the guard: its value past U+10FFFF (U+FFFD), or, its leading zeros aside,
the character of the few digits left.
"""

from __future__ import annotations

import html
import re

# A decimal reference's digits, all of them (as html.unescape's pattern takes them): its leading zeros
# apart, and more than seven digits (at least 10,000,000, past U+10FFFF) as eight.
_DECIMAL = re.compile(r"&#(?=[0-9])0*([0-9]{8})?[0-9]*")


def unescape(text: str) -> str:
    """``html.unescape(text)``, a decimal reference of any length included."""
    try:
        return html.unescape(text)
    except ValueError:  # (only int()'s digit limit raises it)
        return html.unescape(_DECIMAL.sub(_shortened, text))


def _shortened(reference: re.Match[str]) -> str:
    """*reference* with the same value past U+10FFFF, or the same value, in few digits."""
    if reference.group(1) is not None:
        return "&#99999999"
    digits = reference.group()[2:].lstrip("0")
    return "&#" + (digits or "0")
