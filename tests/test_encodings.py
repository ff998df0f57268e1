"""Pages decoded as a browser decodes them (rules/text/encodings.py): real pages of the multilingual
fixture re-encoded in the code pages their languages used, declared by a BOM, the HTTP header, a
<meta> in the first 1,024 bytes, or nowhere."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.multilingual import FIXTURE
from tse_scrapy.rules.text.encodings import PRESCAN_BYTES, browser_label, decode_page, page_encoding

_META_CHARSET = re.compile(r"<meta[^>]*charset[^>]*>", re.I)

# (folder, the code page pages in that language were written in before UTF-8)
LEGACY = [
    ("fr", "cp1252"),
    ("de", "cp1252"),
    ("es", "cp1252"),
    ("ru", "cp1251"),
    ("el", "cp1253"),
    ("ar", "cp1256"),
    ("fa", "cp1256"),
    ("ja", "shift_jis"),
    ("ko", "euc-kr"),
    ("zh_CN", "gb2312"),
]


def undeclared(folder: str) -> list[str]:
    """The folder's real pages as text, their <meta charset> removed."""
    return [_META_CHARSET.sub("", path.read_text("utf-8")) for path in sorted((FIXTURE / folder).glob("*.html"))]


@pytest.mark.parametrize(("folder", "encoding"), LEGACY)
def test_a_page_declared_nowhere_is_detected(folder, encoding):
    for text in undeclared(folder):
        body = text.encode(encoding, "replace")
        assert decode_page(body) == body.decode(encoding, "replace")
        assert page_encoding(body)[1] == "detected"


@pytest.mark.parametrize(("folder", "encoding"), LEGACY)
def test_the_http_charset_comes_before_the_meta_and_detection(folder, encoding):
    text = undeclared(folder)[0].replace("<head>", '<head><meta charset="utf-8">', 1)
    body = text.encode(encoding, "replace")
    assert decode_page(body, http_charset=encoding.upper()) == body.decode(encoding, "replace")
    assert page_encoding(body, encoding)[1] == "http"


@pytest.mark.parametrize(("folder", "encoding"), LEGACY)
def test_a_meta_in_the_first_1024_bytes_declares(folder, encoding):
    text = undeclared(folder)[0].replace(
        "<head>", f'<head><meta http-equiv="Content-Type" content="text/html; charset={encoding}">', 1
    )
    body = text.encode(encoding, "replace")
    assert page_encoding(body) == (page_encoding(body, encoding)[0], "meta")
    assert decode_page(body) == body.decode(encoding, "replace")


def test_a_meta_past_the_first_1024_bytes_is_not_read():
    body = b"<html><head>" + b" " * PRESCAN_BYTES + b'<meta charset="koi8-r"><title>x</title>'
    assert page_encoding(body) == ("utf-8", "detected")


@pytest.mark.parametrize(
    ("body", "http_charset", "expected"),
    [
        ("\ufeff<p>Привет</p>".encode("utf-16-le"), None, ("utf-16-le", "bom")),
        ("\ufeff<p>Привет</p>".encode("utf-16-be"), "windows-1251", ("utf-16-be", "bom")),  # the BOM first
        (b"\xef\xbb\xbf<p>caf\xc3\xa9</p>", "iso-8859-1", ("utf-8", "bom")),
        (b"<p>caf\xe9</p>", "ISO-8859-1", ("cp1252", "http")),  # latin-1 is windows-1252 to a browser
        (b"<p>caf\xe9</p>", "no-such-charset", ("cp1252", "default")),  # an unknown label is skipped
        (b'<meta charset="utf-16"><p>x</p>', None, ("utf-8", "meta")),  # a meta saying UTF-16 means UTF-8
        (b'<meta charset="x-sjis"><p>x</p>', None, ("cp932", "meta")),
        (b"<p>caf\xc3\xa9</p>", None, ("utf-8", "detected")),
        (b"<p>plain ASCII</p>", None, ("utf-8", "detected")),
        (b"<p>caf\xe9 \xff</p>", None, ("cp1252", "default")),  # too little to detect from
    ],
)
def test_the_order_of_the_steps(body, http_charset, expected):
    assert page_encoding(body, http_charset) == expected


def test_utf_16_with_a_bom_reads_without_it():
    text = "<title>Ελληνικά</title><p>κείμενο</p>"
    assert decode_page(text.encode("utf-16")) == text  # Python writes the BOM


@given(st.binary(max_size=3000), st.sampled_from([None, "utf-8", "shift_jis", "bogus", "", "utf-16"]))
def test_any_bytes_decode(body, http_charset):
    text = decode_page(body, http_charset)
    assert isinstance(text, str)
    encoding, source = page_encoding(body, http_charset)
    assert source in ("bom", "http", "meta", "detected", "default")
    "".encode(encoding)  # a codec Python has


@given(st.text(max_size=500))
def test_utf_8_text_round_trips(text):
    assert decode_page(text.encode("utf-8", "surrogatepass")) == text.encode("utf-8", "surrogatepass").decode(
        "utf-8", "replace"
    ).removeprefix("\ufeff")


# The names of the WHATWG Encoding Standard (https://encoding.spec.whatwg.org/#names-and-labels).
@pytest.mark.parametrize(
    ("codec", "name"),
    [
        ("utf-8", "utf-8"),
        ("utf-16-le", "utf-16le"),
        ("utf-16-be", "utf-16be"),
        ("cp932", "shift_jis"),
        ("euc_jp", "euc-jp"),
        ("iso2022_jp", "iso-2022-jp"),
        ("cp949", "euc-kr"),
        ("gb18030", "gb18030"),
        ("big5hkscs", "big5"),
        ("cp1250", "windows-1250"),
        ("cp1252", "windows-1252"),
        ("cp1258", "windows-1258"),
        ("cp874", "windows-874"),
        ("iso8859_2", "iso-8859-2"),
        ("iso8859_16", "iso-8859-16"),
        ("iso8859_8", "iso-8859-8"),  # visual order
        ("iso_8859_8", "iso-8859-8-i"),  # logical order (encodings.LOGICAL_HEBREW): a browser reorders it
        ("koi8_r", "koi8-r"),
        ("koi8_u", "koi8-u"),
        ("cp866", "ibm866"),
        ("mac_roman", "macintosh"),
        ("mac_cyrillic", "x-mac-cyrillic"),
    ],
)
def test_browser_labels(codec, name):
    assert browser_label(codec) == name
