"""A page's text as a browser reads it: its encoding found in the WHATWG order.

1. a byte order mark (UTF-8, UTF-16 LE or BE);
2. the charset of the HTTP ``Content-Type`` the page came with (recorded at
   crawl time: page files keep the bytes, not the headers);
3. ``<meta charset>`` or ``<meta http-equiv="Content-Type">`` in the first
   1,024 bytes (a UTF-16 one means UTF-8, as the HTML standard says: a page
   that could read its own meta tag as ASCII is not UTF-16);
4. detection: bytes that are valid UTF-8 are UTF-8 (a strict decode, fast);
   others, with at least 16 bytes past ASCII, are given to charset-normalizer,
   whose best answer among the encodings browsers know stands unless it
   reads Latin letters only: then windows-1252, as a browser in a Western
   locale reads them (several Latin code pages fit such bytes equally well,
   and charset-normalizer's first pick among them is often cp1250);
5. windows-1252.

Labels are resolved as browsers resolve them (w3lib's table, WHATWG's
mapping: ``iso-8859-1`` and ``ascii`` are windows-1252, ``shift_jis`` is
Microsoft's cp932, ``euc-kr`` cp949, ``gb2312`` gb18030); an unknown label
is skipped, so the next step decides.  Bytes an encoding cannot map become
U+FFFD.
"""

from __future__ import annotations

from typing import Literal

from w3lib.encoding import html_body_declared_encoding, read_bom, resolve_encoding

PRESCAN_BYTES = 1024  # where the HTML standard looks for a <meta> declaration
DETECT_BYTES = 64 * 1024  # what detection reads (its cost grows with the bytes)
FALLBACK = "cp1252"

DETECT_EVIDENCE = 16  # bytes past ASCII detection needs (fewer: windows-1252)

Source = Literal["bom", "http", "meta", "detected", "default"]
_ASCII = bytes(range(128))
_BROWSER_LABELS = {
    "cp932": "shift_jis",
    "cp949": "euc-kr",
    "big5hkscs": "big5",
    "mac_roman": "macintosh",
    "mac_cyrillic": "x-mac-cyrillic",
    "cp866": "ibm866",
    "cp874": "windows-874",
    "utf_16_le": "utf-16le",
    "utf_16_be": "utf-16be",
    "utf_8": "utf-8",
    "iso2022_jp": "iso-2022-jp",
    "koi8_r": "koi8-r",
    "koi8_u": "koi8-u",
    "euc_jp": "euc-jp",
}
# What detection may answer: the legacy encodings browsers know (WHATWG's list, as Python codecs).
_BROWSER_ENCODINGS = {
    *("cp866", "koi8_r", "koi8_u", "mac_roman", "mac_cyrillic", "cp874"),
    *(f"iso8859_{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)),
    *(f"cp{n}" for n in range(1250, 1259)),
    *("gb18030", "big5hkscs", "euc_jp", "iso2022_jp", "cp932", "cp949"),
}
# Unicode ranges (charset-normalizer's names) that Latin text is made of.
_LATIN_RANGES = ("Latin", "Control character", "Punctuation", "Symbols", "Spacing Modifier", "Number Forms")


def page_encoding(body: bytes, http_charset: str | None = None) -> tuple[str, Source]:
    """The Python codec *body* is decoded with, and where it came from."""
    encoding, source, _ = _read(bytes(body), http_charset)
    return encoding, source


def decode_page(body: bytes, http_charset: str | None = None) -> str:
    """*body* (a memoryview of a page file too) as text (``page_encoding``), its byte order mark left out."""
    body = bytes(body)
    encoding, source, text = _read(body, http_charset)
    if text is not None:
        return text
    if source == "bom":
        _, mark = read_bom(body)
        body = body[len(mark or b"") :]
    return body.decode(encoding, "replace")


def _read(body: bytes, http_charset: str | None) -> tuple[str, Source, str | None]:
    """The encoding of *body*, where it came from, and its text when finding it decoded it."""
    bom, _ = read_bom(body)
    if bom:
        return bom, "bom", None
    http = _known(http_charset)
    if http:
        return http, "http", None
    meta = _known(html_body_declared_encoding(body[:PRESCAN_BYTES]))
    if meta:
        return ("utf-8" if meta.startswith("utf-16") else meta), "meta", None
    try:
        return "utf-8", "detected", body.decode("utf-8")  # decoded once: most pages are UTF-8
    except UnicodeDecodeError:
        pass
    sample = body[:DETECT_BYTES]
    if len(sample.translate(None, _ASCII)) < DETECT_EVIDENCE:
        return FALLBACK, "default", None  # too few bytes past ASCII to tell one encoding from another
    # charset-normalizer's matches, best first; the first a browser knows is taken (limiting its
    # search to those instead makes it rank worse: a short Persian page came out mac-cyrillic).
    # Imported here: most pages never need it, and `tse serve` starts sooner without it.
    from charset_normalizer import from_bytes

    best = next((match for match in from_bytes(sample) if match.encoding in _BROWSER_ENCODINGS), None)
    if best is None:
        return FALLBACK, "default", None
    if _latin_only(best.alphabets) and _decodes(body, FALLBACK):
        # Bytes read as Latin text fit several code pages equally well (cp1250, cp1252, cp1257 ...):
        # a browser in a Western locale reads windows-1252, and so does this.
        return FALLBACK, "detected", None
    detected = _known(best.encoding)
    return (detected, "detected", None) if detected else (FALLBACK, "default", None)


def browser_label(encoding: str) -> str:
    """The name a browser knows *encoding* (a Python codec ``page_encoding`` gives) by, for a
    ``Content-Type`` charset: WHATWG's, where Python's differs."""
    name = encoding.lower().replace("-", "_")
    if name in _BROWSER_LABELS:
        return _BROWSER_LABELS[name]
    if name.startswith("cp") and name[2:].isdigit() and 1250 <= int(name[2:]) <= 1258:
        return f"windows-{name[2:]}"
    if name.startswith("iso8859_"):
        return "iso-8859-" + name.removeprefix("iso8859_")
    return name.replace("_", "-")


def _latin_only(alphabets: list[str]) -> bool:
    """The Unicode ranges detection found are Latin letters, punctuation and symbols only."""
    return all(any(word in name for word in _LATIN_RANGES) for name in alphabets)


def _decodes(body: bytes, encoding: str) -> bool:
    try:
        body.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


def _known(label: str | None) -> str | None:
    """The codec a browser uses for *label*, or None for no label or one it does not know."""
    if not label:
        return None
    try:
        return resolve_encoding(label.strip())
    except (LookupError, ValueError, TypeError):
        return None
