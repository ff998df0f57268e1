"""A page's text as a browser reads it: its encoding found in the WHATWG order.

1. a byte order mark (UTF-8, UTF-16 LE or BE);
2. the charset of the HTTP ``Content-Type`` the page came with (recorded at
   crawl time: page files keep the bytes, not the headers);
3. ``<meta charset>`` or ``<meta http-equiv="Content-Type">`` in the first
   1,024 bytes (a UTF-16 one means UTF-8, as the HTML standard says: a page
   that could read its own meta tag as ASCII is not UTF-16);
4. detection: bytes that are valid UTF-8 are UTF-8 (a strict decode, fast);
   others, with at least 16 bytes past ASCII in 64 KB (the first 64 KB, else
   the 64 KB from the first byte past ASCII after them, and so on: a long
   inline script does not hide the text after it), are given to charset-normalizer,
   whose best answer among the encodings browsers know stands unless it
   reads Latin letters only: then windows-1252, as a browser in a Western
   locale reads them (several Latin code pages fit such bytes equally well,
   and charset-normalizer's first pick among them is often cp1250);
5. windows-1252.

Labels are resolved as browsers resolve them: by the label table of the WHATWG
Encoding Standard (https://encoding.spec.whatwg.org/#names-and-labels, written
out below as ``_WHATWG_LABELS``; its labels checked against the ``webencodings``
package's copy of it, by Simon Sapin, BSD, and the labels added since), after
stripping ASCII whitespace and lowering ASCII letters.  Each of its encodings is
read with the Python codec that reads it as browsers do (``iso-8859-1`` and
``ascii`` are windows-1252, ``shift_jis`` Microsoft's cp932, ``euc-kr`` cp949,
``gbk`` and ``gb2312`` gb18030, ``big5`` big5hkscs, ``iso-8859-8-i`` iso8859_8).
``iso-8859-8-i`` (Hebrew in logical order) and ``iso-8859-8`` (visual order: a browser shows its
bytes left to right, unreordered) are the same bytes, read alike, but not shown alike: the logical
one is read with ``LOGICAL_HEBREW``, a Python alias of iso8859_8 that ``browser_label`` names
``iso-8859-8-i``, so a saved copy is sent in the order its page declared.
A label not in the table (``rot13``, ``base64``, ``cp037``, ``utf-32``,
``unicode-escape``: codecs Python has that are no web encoding) is unknown and
skipped, so the next step decides; a ``<meta>`` with an unknown label is passed
over for the next one, as the HTML standard's prescan does.  The charset noted
at crawl time is w3lib's Python name for the header's label (``cp932``): a
Python name of one of the table's codecs is taken as that codec there.

Three choices where a browser's answer serves no search:

- The "replacement" labels (``iso-2022-kr``, ``csiso2022kr``, ``hz-gb-2312``;
  ``iso-2022-cn``, ``iso-2022-cn-ext``, ``replacement``): a browser shows such
  a page as one U+FFFD (the standard's guard against escape sequences hiding
  markup from filters).  Here ISO-2022-KR and HZ are read with Python's codecs
  (iso2022_kr, hz), which give the page's real text: its words are found.  The
  saved copy is then sent as UTF-8 (``browser_reads``), sandboxed as any copy,
  so a browser shows that text too.  ISO-2022-CN has no Python codec: those
  labels are unknown (detection reads their 7-bit bytes: the ASCII words).
- ``x-user-defined``: WHATWG's decoder maps bytes 0x80-0xFF to U+F780-U+F7FF,
  private-use characters that are no words; the HTML standard's prescan makes
  it windows-1252 in a ``<meta>``, and so does this wherever it is declared.
- UTF-16 in a ``<meta>`` is UTF-8 (the HTML standard's rule, above).

Bytes an encoding cannot map become U+FFFD: decoding never raises.
"""

from __future__ import annotations

import codecs
import re
from typing import Literal

from w3lib import encoding as _w3lib
from w3lib.encoding import read_bom

PRESCAN_BYTES = 1024  # where the HTML standard looks for a <meta> declaration
DETECT_BYTES = 64 * 1024  # what detection reads (its cost grows with the bytes)
FALLBACK = "cp1252"

DETECT_EVIDENCE = 16  # bytes past ASCII detection needs (fewer: windows-1252)
# iso-8859-8-i's codec: iso8859_8 under another of its Python names, so that the page is sent on as
# logical order (a browser told iso-8859-8 shows Hebrew visually: its words come out reversed).
LOGICAL_HEBREW = "iso_8859_8"

Source = Literal["bom", "http", "meta", "detected", "default"]
_ASCII = bytes(range(128))
_PAST_ASCII = re.compile(rb"[\x80-\xff]")
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
    "iso2022_kr": "iso-2022-kr",
    "hz": "hz-gb-2312",
}
# The WHATWG Encoding Standard's encodings, each with its labels (https://encoding.spec.whatwg.org/#names-and-labels,
# as of 2024; the webencodings package's labels.py, by Simon Sapin, BSD, has all but those added since 2012:
# csunicode, iso-10646-ucs-2, ucs-2, unicode, unicodefeff, unicodefffe, unicode11utf8, unicode20utf8,
# x-unicode20utf8, koi8-ru, ms932, iso-2022-cn, iso-2022-cn-ext, replacement), and the Python codec it is read
# with (None: read with none, the label is skipped).
_WHATWG_LABELS: dict[str, tuple[str | None, str]] = {
    "utf-8": ("utf-8", "unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8"),
    "ibm866": ("cp866", "866 cp866 csibm866 ibm866"),
    "iso-8859-2": (
        "iso8859_2",
        "csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 iso_8859-2:1987 l2 latin2",
    ),
    "iso-8859-3": (
        "iso8859_3",
        "csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 iso_8859-3:1988 l3 latin3",
    ),
    "iso-8859-4": (
        "iso8859_4",
        "csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 iso_8859-4:1988 l4 latin4",
    ),
    "iso-8859-5": (
        "iso8859_5",
        "csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 iso_8859-5 iso_8859-5:1988",
    ),
    "iso-8859-6": (
        "iso8859_6",
        "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 iso-8859-6 iso-8859-6-e iso-8859-6-i"
        " iso-ir-127 iso8859-6 iso88596 iso_8859-6 iso_8859-6:1987",
    ),
    "iso-8859-7": (
        "iso8859_7",
        "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 iso8859-7 iso88597 iso_8859-7"
        " iso_8859-7:1987 sun_eu_greek",
    ),
    "iso-8859-8": (
        "iso8859_8",
        "csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 iso8859-8 iso88598 iso_8859-8"
        " iso_8859-8:1988 visual",
    ),
    "iso-8859-8-i": (LOGICAL_HEBREW, "csiso88598i iso-8859-8-i logical"),  # the same bytes, logical order
    "iso-8859-10": ("iso8859_10", "csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6"),
    "iso-8859-13": ("iso8859_13", "iso-8859-13 iso8859-13 iso885913"),
    "iso-8859-14": ("iso8859_14", "iso-8859-14 iso8859-14 iso885914"),
    "iso-8859-15": ("iso8859_15", "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9"),
    "iso-8859-16": ("iso8859_16", "iso-8859-16"),
    "koi8-r": ("koi8_r", "cskoi8r koi koi8 koi8-r koi8_r"),
    "koi8-u": ("koi8_u", "koi8-ru koi8-u"),
    "macintosh": ("mac_roman", "csmacintosh mac macintosh x-mac-roman"),
    "windows-874": ("cp874", "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874"),
    "windows-1250": ("cp1250", "cp1250 windows-1250 x-cp1250"),
    "windows-1251": ("cp1251", "cp1251 windows-1251 x-cp1251"),
    "windows-1252": (
        "cp1252",
        "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 iso8859-1 iso88591 iso_8859-1"
        " iso_8859-1:1987 l1 latin1 us-ascii windows-1252 x-cp1252",
    ),
    "windows-1253": ("cp1253", "cp1253 windows-1253 x-cp1253"),
    "windows-1254": (
        "cp1254",
        "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 iso_8859-9:1989 l5 latin5"
        " windows-1254 x-cp1254",
    ),
    "windows-1255": ("cp1255", "cp1255 windows-1255 x-cp1255"),
    "windows-1256": ("cp1256", "cp1256 windows-1256 x-cp1256"),
    "windows-1257": ("cp1257", "cp1257 windows-1257 x-cp1257"),
    "windows-1258": ("cp1258", "cp1258 windows-1258 x-cp1258"),
    "x-mac-cyrillic": ("mac_cyrillic", "x-mac-cyrillic x-mac-ukrainian"),
    "gbk": ("gb18030", "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk"),
    "gb18030": ("gb18030", "gb18030"),
    "big5": ("big5hkscs", "big5 big5-hkscs cn-big5 csbig5 x-x-big5"),
    "euc-jp": ("euc_jp", "cseucpkdfmtjapanese euc-jp x-euc-jp"),
    "iso-2022-jp": ("iso2022_jp", "csiso2022jp iso-2022-jp"),
    "shift_jis": ("cp932", "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis"),
    "euc-kr": (
        "cp949",
        "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601 ksc_5601 windows-949",
    ),
    # "replacement" to a browser (one U+FFFD for the page): read here with Python's codecs where it has one.
    "iso-2022-kr": ("iso2022_kr", "csiso2022kr iso-2022-kr"),
    "hz-gb-2312": ("hz", "hz-gb-2312"),
    "replacement": (None, "iso-2022-cn iso-2022-cn-ext replacement"),
    "utf-16be": ("utf-16-be", "unicodefffe utf-16be"),
    "utf-16le": ("utf-16-le", "csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le"),
    "x-user-defined": ("cp1252", "x-user-defined"),  # what the HTML standard's prescan makes of it
}
# Label -> Python codec (None: skipped).
LABELS: dict[str, str | None] = {label: codec for codec, labels in _WHATWG_LABELS.values() for label in labels.split()}
# The codecs labels are read with; and the codecs a browser reads as they are read here (not the two it
# shows as one U+FFFD, nor UTF-32, which only a UTF-32 byte order mark gives).
CODECS = frozenset(codec for codec in LABELS.values() if codec is not None)
BROWSER_CODECS = CODECS - {"iso2022_kr", "hz"}
# A codec's Python names (``cp932``, ``iso8859-5`` as w3lib notes a header's charset, ``iso8859_5``) -> the codec.
# A Python name says no order: ``iso8859-8`` is iso-8859-8's (w3lib knows no iso-8859-8-i).
_CODEC_NAMES = {
    spelling.replace("-", "_"): codec
    for codec in CODECS - {LOGICAL_HEBREW}
    for spelling in (codec, codecs.lookup(codec).name)
}
_WHITESPACE = "\t\n\f\r "  # ASCII whitespace, what WHATWG strips around a label
_MAX_LABEL = 64  # longer than any label: unknown, whatever it holds (no cost grows with it)
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
    http = _known(http_charset) or _codec(http_charset)  # (noted at crawl time as w3lib's Python name)
    if http:
        return http, "http", None
    meta = _declared(body[:PRESCAN_BYTES])
    if meta:
        return ("utf-8" if meta.startswith("utf-16") else meta), "meta", None
    try:
        return "utf-8", "detected", body.decode("utf-8")  # decoded once: most pages are UTF-8
    except UnicodeDecodeError:
        pass
    sample = _detection_sample(body)
    if sample is None:
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
    detected = _codec(best.encoding)
    return (detected, "detected", None) if detected else (FALLBACK, "default", None)


def _detection_sample(body: bytes) -> bytes | None:
    """The DETECT_BYTES of *body* detection reads: its first, when they hold DETECT_EVIDENCE bytes past
    ASCII; else those from its first byte past ASCII after them, and so on; None when none do.  A page
    whose first 64 KB are ASCII but a few bytes (an inline script, a short title) was read as
    windows-1252 whatever followed: a windows-1251 page's words and links garbled (a review's find).
    Each window starts past the last: the page is read once."""
    start = 0
    while True:
        sample = body[start : start + DETECT_BYTES]
        if len(sample.translate(None, _ASCII)) >= DETECT_EVIDENCE:
            return sample
        found = _PAST_ASCII.search(body, start + DETECT_BYTES)
        if found is None:
            return None
        start = found.start()


def browser_label(encoding: str) -> str:
    """The name a browser knows *encoding* (a Python codec ``page_encoding`` gives) by, for a
    ``Content-Type`` charset: WHATWG's, where Python's differs."""
    if encoding == LOGICAL_HEBREW:  # (its spelling alone tells it from iso8859_8)
        return "iso-8859-8-i"
    name = encoding.lower().replace("-", "_")
    if name in _BROWSER_LABELS:
        return _BROWSER_LABELS[name]
    if name.startswith("cp") and name[2:].isdigit() and 1250 <= int(name[2:]) <= 1258:
        return f"windows-{name[2:]}"
    if name.startswith("iso8859_"):
        return "iso-8859-" + name.removeprefix("iso8859_")
    return name.replace("_", "-")


def header_charset(content_type: str) -> str | None:
    """The charset a ``Content-Type`` header value declares, as crawls note it: w3lib's Python name for
    its label (``cp932``), or, for a label w3lib does not know but browsers do (``iso-8859-8-i``,
    ``x-mac-cyrillic``), the label itself, lowered; None for none."""
    if charset := _w3lib.http_content_type_encoding(content_type):
        return charset
    match = _w3lib._HEADER_ENCODING_RE.search(content_type)
    if match is None or content_type.find('"', 0, match.start()) >= 0:
        return None  # (a charset= in a quoted parameter is none: w3lib's walk found none either)
    label = _normalized(match.group(1) or match.group(2))
    return label if _known(label) else None


def _latin_only(alphabets: list[str]) -> bool:
    """The Unicode ranges detection found are Latin letters, punctuation and symbols only."""
    return all(any(word in name for word in _LATIN_RANGES) for name in alphabets)


def _decodes(body: bytes, encoding: str) -> bool:
    try:
        body.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


def _known(label: object) -> str | None:
    """The codec a browser uses for *label* (``LABELS``), or None for no label or one it does not know."""
    return LABELS.get(_normalized(label))


def _codec(name: object) -> str | None:
    """The codec of ``CODECS`` that a Python *name* of it names (``cp932``, ``iso8859-5``), else None."""
    return _CODEC_NAMES.get(_normalized(name).replace("-", "_"))


def _normalized(label: object) -> str:
    """*label* without the ASCII whitespace around it, its ASCII letters lowered; "" for no label or one
    no encoding has (not text, too long, not ASCII: str.lower would make "\u212aoi8-r", a Kelvin sign,
    "koi8-r")."""
    if not isinstance(label, str) or len(label) > _MAX_LABEL or not label.isascii():
        return ""
    return label.strip(_WHITESPACE).lower()


def _declared(head: bytes) -> str | None:
    """The codec of the first ``<meta>`` charset (or XML declaration) in *head* whose label is known
    (``_known``): the HTML standard's prescan goes on past an unknown one.  w3lib's scanner finds the
    labels (its ``html_body_declared_encoding`` would resolve them its own way: Python's aliases)."""
    for match in _w3lib._BODY_SCAN_RE.finditer(head.decode("latin-1")):
        if match.group("body") is not None:
            break
        if (attributes := match.group("meta")) is not None:
            if "charset" not in attributes.lower():
                continue
            label = _w3lib._meta_charset_label(attributes)
        elif match.group("xml") is not None:
            label = _w3lib._xml_encoding_label(match.group("xml"))
        else:  # a comment
            continue
        if codec := _known(label):
            return codec
    return None


def browser_reads(encoding: str) -> bool:
    """Whether a browser reads a page in *encoding* (a codec ``page_encoding`` gives) as it is read
    here: not for ISO-2022-KR and HZ (one U+FFFD to a browser) nor UTF-32; such a page's saved copy is
    sent as UTF-8."""
    return encoding in BROWSER_CODECS
