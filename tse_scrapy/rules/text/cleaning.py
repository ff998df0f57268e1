"""A page's text cleaned as the indexer and the search show it: tags dropped, character references
decoded, whitespace and control characters collapsed, cut at a word.  Shared by ``pagetext``,
``pagefields`` and ``markuppass``'s Python path (``markuppass.pyx`` copies these rules: its compiled
copy is current only while this file is unchanged, ``compiled.MIRRORS``)."""

from __future__ import annotations

import re

from ..web.entities import unescape

# A tag, as the visible text drops it.
TAG = re.compile(r"<[A-Za-z/!?][^>]*>")

# Control characters (NUL included) are no more visible than whitespace
# (str.split's, which takes in the non-breaking spaces of &nbsp;): these are the others.
CONTROL_CHARACTERS = "".join(map(chr, [*range(0x00, 0x09), *range(0x0E, 0x1C), *range(0x7F, 0xA0)]))
_CONTROLS = re.compile(f"[{re.escape(CONTROL_CHARACTERS)}]+")
# Where a page's text can be cut and cleaned in two parts: an entity holds no
# whitespace, control character or "&", and a whitespace run ends before "&".
_CLEAN_CUT = re.compile(r"(?<=[\s\x00-\x1f\x7f-\x9f])|(?=&)")
# TAG as pagetext._NOT_VISIBLE takes a tag: case-insensitive, so that the letters that fold to ASCII
# ones (the dotless i, the long s, the Kelvin sign) start a tag too.
TAG_FOLDING = re.compile(r"<[A-Za-z/!?][^>]*>", re.I)

# The elements whose contents are not shown (pagetext says why).  <noscript> is among them: a
# reader's browser runs scripts and hides it, and what it holds is mostly "please enable JavaScript"
# boilerplate, which would make poor snippets.
HIDDEN_ELEMENTS = "script|style|template|noscript"
# Where something pagetext._NOT_VISIBLE drops whole (a comment, a hidden element, a title) may start.
# Its names in either case by classes, not re.I (0.18 -> 0.11 ms a wikipedia page), but where the text
# holds a letter that folds to ASCII.
_DROPPED_NAMES = "|".join(
    "".join(f"[{letter}{letter.upper()}]" for letter in name) for name in [*HIDDEN_ELEMENTS.split("|"), "title"]
)
DROPPED_START = re.compile(rf"<(?=[!nNsStT])(?:!--|(?:{_DROPPED_NAMES})(?=[\s/>]))")
DROPPED_START_FOLDING = re.compile(rf"<(?:!--|(?:{HIDDEN_ELEMENTS}|title)(?=[\s/>]))", re.I)

# Navigation (pagetext says what it is and why it is no page's text; markuppass finds it).
NAVIGATION_NAMES = 8  # at most this many element names a page are looked for
NAV_START = re.compile(r"<nav(?=[\s/>])", re.I)
# An attribute's value that starts with "navigation", in any ASCII case ("=" found first: fast).
NAVIGATION_VALUE = re.compile(r"""=[\t\n\f\r "']*[nN][aA][vV][iI][gG][aA][tT][iI][oO][nN]""")
_TAG_NAME = re.compile(r"<([A-Za-z][A-Za-z0-9-]{0,30})(?=[\s/>])")
# An attribute of a start tag (up to its ">"), its value quoted or not: a quoted value is one unit, so
# that an attribute whose value reads ' role="navigation"' is no role.
_ATTRIBUTE = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]*)))?""")
_ASCII_WHITESPACE = "\t\n\f\r "
_TOKEN = re.compile(r"[^\t\n\f\r ]+")  # a role, as an ARIA role list splits them (on ASCII whitespace)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# A tag's start as pagetext._NOT_VISIBLE takes it (TAG_FOLDING the tag): case-insensitive, so that the
# letters that fold to ASCII ones (the dotless i and the dotted I, the long s, the Kelvin sign) start a
# tag in both; only where the text holds one of them (a case-insensitive pattern reads a page half as fast).
TAG_START_FOLDING = re.compile(r"<[A-Za-z/!?]", re.I)


def cleaned(text: str, limit: int) -> str:
    """*text* (its tags dropped) cleaned (``clean``), to *limit* characters cut at a word."""
    if limit <= 0:
        return ""
    # Clean a prefix just long enough for the limit, not the whole page: one
    # that ends where no entity or whitespace run continues, so that it cleans
    # to a prefix of the whole page's text.  It must clean to more than *limit*
    # characters so that the cut sees the character after them.
    end = 2 * limit + 100
    while True:
        cut = _CLEAN_CUT.search(text, end) if end < len(text) else None
        prefix = clean(text if cut is None else text[: cut.start()])
        if cut is None or len(prefix) > limit:
            return cut_at_word(prefix, limit)
        end *= 4


def clean(text: str) -> str:
    """*text* with entities decoded and whitespace collapsed to single spaces, stripped."""
    unescaped = unescape(text)
    spaced = " ".join(unescaped.split())
    # Every control character is unprintable or whitespace (which split drops): a printable result
    # held none but whitespace, and is the same as with them made spaces; isprintable costs a third
    # of the pattern's pass (most pages hold none).
    if spaced.isprintable():
        return spaced
    return " ".join(_CONTROLS.sub(" ", unescaped).split())


def cut_at_word(text: str, limit: int) -> str:
    """At most *limit* characters of *text* (single-spaced), cut before a space when there is one."""
    if len(text) <= limit:
        return text
    if text[limit] == " ":
        return text[:limit]
    space = text.rfind(" ", 0, limit)
    # A single word longer than the limit: cut inside it.
    return text[:space] if space > 0 else text[:limit]


def tag_open_at(markup: str, at: int, floor: int) -> re.Match[str] | None:
    """The start of the tag *at* is within, opened before it: the first one opened after the last ">"
    before it (looked for back to *floor*: where no tag is open, or a "<" the caller saw); None when
    *at* is in no tag."""
    return TAG_START_FOLDING.search(markup, max(markup.rfind(">", floor, at) + 1, floor), at)


def navigation_role_tag(markup: str, start: int, end: int) -> str | None:
    """The name (lowercased) of the start tag at *start* (its ">" at *end*) when its role is navigation,
    else None: its first ``role`` attribute's first token, split on ASCII whitespace and compared ASCII
    case-insensitively, as browsers compare roles (a browser takes a tag's first attribute of a name;
    ARIA a role list's first role it knows, which a later "navigation" token after an unknown one would
    be, not read here: no page seen writes its role so)."""
    tag = _TAG_NAME.match(markup, start)
    if tag is None:
        return None
    for attribute in _ATTRIBUTE.finditer(markup, tag.end(), end):
        if attribute.group(1).lower() == "role":
            roles = next((value for value in attribute.groups()[1:] if value is not None), "")
            first = _TOKEN.match(roles.lstrip(_ASCII_WHITESPACE))
            if first is not None and first.group().translate(_ASCII_LOWER) == "navigation":
                return tag.group(1).lower()
            return None
    return None
