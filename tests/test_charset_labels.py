"""Charset labels resolved by the WHATWG Encoding Standard's table (rules/text/encodings.py): its own
labels, in any case and with spaces around, to the codecs browsers read them with; the labels of codecs
Python has that are no web encoding (rot13, base64, cp037, utf-32 ...) unknown, whatever they hold; and a
real crawl, index and search server of a site whose pages declare such labels."""

import json
import re
import urllib.parse
import urllib.request
from encodings.aliases import aliases

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import BIN, ROOT, clean_env, crawl_site, run_tse
from tests.support.serving import tse_serve
from tse_scrapy.devtools.siteserver import Rule
from tse_scrapy.rules.text import encodings
from tse_scrapy.rules.text.encodings import decode_page, page_encoding

# (label, the codec it is read with; None: unknown, skipped)
EXAMPLES = [
    # The standard's own names and labels.
    ("utf-8", "utf-8"),
    ("unicode-1-1-utf-8", "utf-8"),
    ("x-unicode20utf8", "utf-8"),
    ("ascii", "cp1252"),
    ("US-ASCII", "cp1252"),
    ("iso-8859-1", "cp1252"),
    ("latin1", "cp1252"),
    ("ansi_x3.4-1968", "cp1252"),
    ("iso-8859-9", "cp1254"),
    ("iso-8859-11", "cp874"),
    ("tis-620", "cp874"),
    # Hebrew: the same bytes, read alike, but logical order (iso-8859-8-i) is told from visual order.
    ("iso-8859-8-i", "iso_8859_8"),
    ("logical", "iso_8859_8"),
    ("visual", "iso8859_8"),
    ("iso-8859-8", "iso8859_8"),
    ("iso-8859-16", "iso8859_16"),
    ("x-mac-cyrillic", "mac_cyrillic"),
    ("x-mac-ukrainian", "mac_cyrillic"),
    ("macintosh", "mac_roman"),
    ("koi8-ru", "koi8_u"),
    ("koi8", "koi8_r"),
    ("866", "cp866"),
    ("gbk", "gb18030"),
    ("gb2312", "gb18030"),
    ("chinese", "gb18030"),
    ("gb18030", "gb18030"),
    ("big5", "big5hkscs"),
    ("big5-hkscs", "big5hkscs"),
    ("shift_jis", "cp932"),
    ("ms932", "cp932"),
    ("windows-31j", "cp932"),
    ("euc-jp", "euc_jp"),
    ("iso-2022-jp", "iso2022_jp"),
    ("euc-kr", "cp949"),
    ("ks_c_5601-1987", "cp949"),
    ("windows-949", "cp949"),
    ("utf-16", "utf-16-le"),
    ("unicode", "utf-16-le"),
    ("ucs-2", "utf-16-le"),
    ("unicodefffe", "utf-16-be"),
    ("utf-16be", "utf-16-be"),
    # "replacement" to a browser: read with Python's codec where it has one, else unknown.
    ("iso-2022-kr", "iso2022_kr"),
    ("csiso2022kr", "iso2022_kr"),
    ("hz-gb-2312", "hz"),
    ("iso-2022-cn", None),
    ("iso-2022-cn-ext", None),
    ("replacement", None),
    ("x-user-defined", "cp1252"),
    # Any case, ASCII whitespace around.
    ("UTF-8", "utf-8"),
    (" Shift_JIS\t", "cp932"),
    ("\n\f\rKOI8-R  ", "koi8_r"),
    ("ISO-8859-8-I", "iso_8859_8"),
    # Codecs Python has that are no web encoding, and other hostile labels.
    ("rot13", None),
    ("rot-13", None),
    ("rot_13", None),
    ("base64", None),
    ("zlib", None),
    ("hex", None),
    ("bz2", None),
    ("quopri", None),
    ("uu", None),
    ("undefined", None),
    ("idna", None),
    ("punycode", None),
    ("cp037", None),
    ("utf-32", None),
    ("utf-32le", None),
    ("unicode-escape", None),
    ("unicode_escape", None),
    ("raw-unicode-escape", None),
    ("utf-7", None),
    ("utf8\x00", None),
    ("utf 8", None),
    ("\u212aoi8-r", None),  # a Kelvin sign, which str.lower makes "k"
    ("\u00a0utf-8", None),  # no-break space is not ASCII whitespace
    ("", None),
    ("   ", None),
    ("x" * 100_000, None),
    (None, None),
]


@pytest.mark.parametrize(("label", "codec"), EXAMPLES)
def test_labels(label, codec):
    assert encodings._known(label) == codec


def test_the_table_holds_the_standards_labels_and_only_text_codecs():
    from tse_scrapy.rules.text.encodings import CODECS, LABELS

    assert len(LABELS) == 228  # the standard's labels (as of 2024)
    assert all(label == label.strip().lower() and label.isascii() for label in LABELS)
    for codec in CODECS:
        assert isinstance(b"<p>\xff\x80 abc".decode(codec, "replace"), str)  # a text codec Python has
    assert "rot_13" not in CODECS and "base64" not in CODECS and "cp037" not in CODECS


@pytest.mark.parametrize(
    ("body", "http_charset", "expected"),
    [
        (b'<meta charset="rot13"><p>hello world</p>', None, ("utf-8", "detected")),
        (b"<p>hello world</p>", "base64", ("utf-8", "detected")),
        (b"<p>hello world</p>", "rot-13", ("utf-8", "detected")),  # a charset noted by w3lib's name
        (b'<meta charset="cp037"><p>hello world</p>', None, ("utf-8", "detected")),
        (b'<meta charset="utf-32"><p>hello</p>', None, ("utf-8", "detected")),
        (b'<meta charset="unicode-escape"><p>\\u0041</p>', None, ("utf-8", "detected")),
        (b'<meta charset="undefined"><p>x</p>', "idna", ("utf-8", "detected")),
        # The prescan goes past a <meta> whose label is unknown to the next.
        (b'<meta charset="rot13"><meta charset="koi8-r"><p>x</p>', None, ("koi8_r", "meta")),
        (b'<meta charset="x-mac-cyrillic"><p>x</p>', None, ("mac_cyrillic", "meta")),
        (b'<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-8-i">', None, ("iso_8859_8", "meta")),
        (b'<meta charset="x-user-defined"><p>caf\xe9</p>', None, ("cp1252", "meta")),
        (b'<meta charset="iso-2022-kr"><p>x</p>', None, ("iso2022_kr", "meta")),
        # The charset noted at crawl time is w3lib's Python name of the header's label.
        (b"<p>x</p>", "cp932", ("cp932", "http")),
        (b"<p>x</p>", "iso8859-5", ("iso8859_5", "http")),
        (b"<p>x</p>", "mac-roman", ("mac_roman", "http")),
        (b"<p>x</p>", "hz", ("hz", "http")),
        (b"<p>x</p>", "iso8859-8", ("iso8859_8", "http")),  # w3lib's name for iso-8859-8: visual
        # ... and a label w3lib does not know, noted as it is (header_charset).
        (b"<p>x</p>", "iso-8859-8-i", ("iso_8859_8", "http")),
    ],
)
def test_declarations(body, http_charset, expected):
    assert page_encoding(body, http_charset) == expected
    assert isinstance(decode_page(body, http_charset), str)


# A Content-Type header's charset as a crawl notes it (w3lib's name; else the label browsers know).
@pytest.mark.parametrize(
    ("content_type", "noted"),
    [
        ("text/html; charset=Shift_JIS", "cp932"),
        ("text/html; charset=ISO-8859-8", "iso8859-8"),
        ("text/html; charset=ISO-8859-8-I", "iso-8859-8-i"),
        ('text/html; charset="logical"', "logical"),
        ("text/html; charset=x-mac-cyrillic", "x-mac-cyrillic"),
        ("text/html; charset=no-such-charset", None),
        ('text/html; title="a; charset=iso-8859-8-i"', None),
        ("text/html", None),
    ],
)
def test_header_charsets(content_type, noted):
    assert encodings.header_charset(content_type) == noted


@given(st.sampled_from(sorted(encodings.LABELS)), st.booleans())
def test_a_noted_header_charset_reads_as_its_label(label, upper):
    """Whatever a header's label, its note reads back as the codec the label names (a label with
    ``:`` or ``.`` in it is not matched, by w3lib either: not noted, the page decides)."""
    noted = encodings.header_charset("text/html; charset=" + (label.upper() if upper else label))
    assert noted is None or page_encoding(b"<p>x</p>", noted)[0] == encodings.LABELS[label]
    assert noted is not None or encodings.LABELS[label] is None or any(c in label for c in ":.")


def test_iso_2022_kr_and_hz_are_read_as_text():
    from tse_scrapy.rules.text.encodings import browser_reads

    korean = "<p>\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8</p>"
    chinese = "<p>\u5317\u4eac\u5929\u6c14</p>"
    assert decode_page(korean.encode("iso2022_kr"), "iso-2022-kr") == korean
    assert decode_page(chinese.encode("hz"), "hz-gb-2312") == chinese
    assert not browser_reads("iso2022_kr") and not browser_reads("hz") and not browser_reads("utf-32-le")
    assert browser_reads("cp932") and browser_reads("utf-8")


# Labels of the standard's and Python's (codecs.aliases: names of codecs, text or not).
_SOME_LABELS = sorted({label for label, _ in EXAMPLES if label and len(label) < 40} | set(aliases))
_LABEL_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from([label for label, _ in EXAMPLES if label is not None]),
    st.builds(lambda label, before, after: before + label.upper() + after, st.sampled_from(_SOME_LABELS),
              st.text(" \t\n\u00a0", max_size=2), st.text(" \t\n\x00", max_size=2)),
)  # fmt: skip


@given(_LABEL_TEXT)
def test_any_label_resolves_to_a_browser_codec_or_none(label):
    codec = encodings._known(label)
    assert codec is None or codec in encodings.CODECS


@given(st.binary(max_size=2000), _LABEL_TEXT, st.one_of(st.none(), _LABEL_TEXT))
def test_any_page_with_any_label_decodes(body, meta_label, http_charset):
    page = b'<meta charset="' + meta_label.encode("utf-8", "surrogatepass") + b'">' + body
    for charset in (http_charset, None):
        assert isinstance(decode_page(page, charset), str)
        encoding, _ = page_encoding(page, charset)
        assert encoding in encodings.CODECS or encoding in ("utf-8", "utf-32-le", "utf-32-be", "cp1252")
        "".encode(encoding)


_PAGE = "<!DOCTYPE html><html><head>{meta}<title>{title}</title></head><body><p>{text}</p></body></html>\n"


def test_a_site_with_hostile_labels_is_crawled_indexed_and_served(serve, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    pages = {
        "rot13.html": ('<meta charset="rot13">', "Rot label page", "rotcanary meadowlark"),
        "base64.html": ("", "Base64 label page", "basecanary nightingale"),
        "cp037.html": ('<meta charset="cp037">', "Ebcdic label page", "ebcdiccanary kingfisher"),
        "hz.html": ('<meta charset="hz-gb-2312">', "Hz page", "hzcanary \u5317\u4eac\u5929\u6c14"),
    }
    for name, (meta, title, text) in pages.items():
        encoding = "hz" if name == "hz.html" else "utf-8"
        (site / name).write_bytes(_PAGE.format(meta=meta, title=title, text=text).encode(encoding))
    links = "".join(f'<a href="{name}">{name}</a>' for name in pages)
    (site / "index.html").write_text(f"<html><head><title>Labels</title></head><body>{links}</body></html>")
    server = serve(site)
    server.rules["/base64.html"] = Rule(headers={"Content-Type": "text/html; charset=base64"})
    server.rules["/rot13.html"] = Rule(headers={"Content-Type": "text/html; charset=rot13"})
    crawled = tmp_path / "pages"
    crawled.mkdir()
    assert crawl_site(server, crawled, 1).returncode == 0
    index = tmp_path / "index"
    done = run_tse("index", crawled, index)
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    assert run_tse("index", crawled, index, "--update").returncode == 0
    with tse_serve([str(BIN / "tse"), "serve", str(crawled), str(index)], clean_env(), ROOT) as run:
        for word, name in [
            ("meadowlark", "rot13.html"),
            ("nightingale", "base64.html"),
            ("kingfisher", "cp037.html"),
            ("\u5317\u4eac", "hz.html"),
        ]:
            query = urllib.parse.quote(word)
            with urllib.request.urlopen(f"{run.base}/api/search?q={query}", timeout=30) as response:
                results = json.loads(response.read())["results"]
            assert [result["url"] for result in results] == [f"{server.url}/{name}"], (word, results)
            with urllib.request.urlopen(f"{run.base}/doc/{results[0]['docid']}", timeout=30) as response:
                content_type = response.headers["Content-Type"]
                body = response.read()
            charset = re.search(r"charset=(\S+)", content_type).group(1)
            assert charset in ("utf-8", "windows-1252"), content_type  # never cp037, rot-13, base64 or hz
            assert word in body.decode(charset)
    assert run.process.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
