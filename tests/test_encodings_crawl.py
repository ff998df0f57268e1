"""Pages in legacy encodings, crawled from a real nginx and found by their titles: a charset given only
by the HTTP header (noted at crawl time, rules/files/pagenotes.py), only by <meta>, nowhere, and a UTF-16 BOM.
The pages are real translated pages (the multilingual fixture) re-encoded as sites once served them."""

import re

from tests.conftest import run_tse
from tests.support.multilingual import FIXTURE
from tests.support.sitecrawl import crawl_served_site, query_answers
from tse_scrapy.rules.files.pagenotes import CHARSETS, read_charsets

_META_CHARSET = re.compile(r"<meta[^>]*charset[^>]*>", re.I)
_TITLE = re.compile(r"<title>(.*?)</title>", re.S | re.I)

# Hebrew pages (the fixture has none): iso-8859-8-i is logical order, iso-8859-8 visual; the same bytes.
_HEBREW = (
    "<html><head><title>{}</title></head><body><h1>{}</h1><p>{}</p></body></html>\n"
)  # fmt: skip
HEBREW_PAGES = {
    "he-meta": _HEBREW.format(*["מדריך ההתקנה של דביאן"] * 2, "לפני שמתחילים להתקין כדאי לגבות את הקבצים החשובים."),
    "he-header": _HEBREW.format(*["הורדת קבצים מהרשת"] * 2, "אפשר להוריד את תמונות ההתקנה מאתר האינטרנט."),
    "he-visual": _HEBREW.format(*["תנאי רישיון התוכנה"] * 2, "התוכנה חופשית וניתן להפיץ אותה."),
}

# name: (fixture page, encoding, how it is declared: "header", "meta", "nowhere" or "bom")
PAGES = {
    "ja.html": ("ja/ch08s06.html", "shift_jis", "header"),
    "ko.html": ("ko/ch08s06.html", "euc-kr", "header"),
    # The header wins over a <meta> that says otherwise (a server's charset beside a stale page).
    "eucjp.html": ("ja/ch07s01.html", "euc-jp", "header, and a wrong meta"),
    "ru.html": ("ru/ch04s06.html", "windows-1251", "meta"),
    "fr.html": ("fr/ch04s07.html", "windows-1252", "nowhere"),
    "el.html": ("el/ch07s01.html", "utf-16", "bom"),
    "he.html": ("he-meta", "iso-8859-8-i", "meta"),
    "he-header.html": ("he-header", "iso-8859-8-i", "header"),
    "he-visual.html": ("he-visual", "iso-8859-8", "meta"),
}


def write_site(directory):
    titles = {}
    for name, (source, encoding, declared) in PAGES.items():
        text = _META_CHARSET.sub("", HEBREW_PAGES.get(source) or (FIXTURE / source).read_text("utf-8"))
        if declared == "header, and a wrong meta":
            text = text.replace("<head>", '<head><meta charset="shift_jis">', 1)
        if declared == "meta":
            text = text.replace(
                "<head>", f'<head><meta http-equiv="Content-Type" content="text/html; charset={encoding}">', 1
            )
        titles[name] = " ".join(_TITLE.search(text).group(1).split())
        (directory / name).write_bytes(text.encode(encoding.removesuffix("-i"), "replace"))
    links = "".join(f'<a href="{name}">{name}</a>' for name in PAGES)
    (directory / "index.html").write_text(f"<html><head><title>Encodings</title></head><body>{links}</body></html>")
    return titles


# The charset of two pages only in the HTTP header (nginx's charset directive adds it to Content-Type).
LOCATIONS = """
        location = /ja.html { charset Shift_JIS; }
        location = /ko.html { charset EUC-KR; }
        location = /eucjp.html { charset EUC-JP; }
        location = /he-header.html { charset ISO-8859-8-I; }
"""


def test_pages_in_every_encoding_are_found_by_their_titles(nginx, tmp_path):
    server, pages, titles = crawl_served_site(nginx, tmp_path, write_site, LOCATIONS, 1)
    notes = read_charsets(pages)
    assert notes == {
        f"{server.url}/ja.html": "cp932",
        f"{server.url}/ko.html": "cp949",
        f"{server.url}/eucjp.html": "euc_jp",
        f"{server.url}/he-header.html": "iso-8859-8-i",  # a label w3lib does not know, noted as it is
    }, notes
    assert (pages / CHARSETS).is_dir()
    index = tmp_path / "index"
    assert run_tse("index", pages, index).returncode == 0
    # Only the title's words that are not ASCII: a page decoded wrongly cannot match them.
    queries = [" ".join(w for w in re.findall(r"\w+", titles[name]) if not w.isascii()) for name in PAGES]
    firsts = [answers[0] if answers else (None, None) for answers in query_answers(pages, index, queries, "relevance")]
    assert [url for _, url in firsts] == [f"{server.url}/{name}" for name in PAGES], (queries, firsts)
    # The saved copy is sent in the charset it was indexed in.
    from starlette.testclient import TestClient

    from tse_scrapy.index.engine import QueryEngine
    from tse_scrapy.index.storage import IndexReader
    from tse_scrapy.search.app import create_app

    client = TestClient(create_app(QueryEngine(pages, IndexReader(index))))
    for (name, (_, encoding, _)), (doc_id, _) in zip(PAGES.items(), firsts, strict=True):
        saved = client.get(f"/doc/{doc_id}")
        charset = saved.headers["content-type"].removeprefix("text/html; charset=")
        expected = {"shift_jis": "shift_jis", "euc-kr": "euc-kr", "euc-jp": "euc-jp", "windows-1251": "windows-1251"}
        expected |= {"windows-1252": "windows-1252", "utf-16": "utf-16le"}
        # Hebrew in logical order is sent as such: told iso-8859-8 (visual), a browser shows its words reversed.
        expected |= {"iso-8859-8-i": "iso-8859-8-i", "iso-8859-8": "iso-8859-8"}
        assert charset == expected[encoding], (name, saved.headers["content-type"])
        codec = charset.replace("utf-16le", "utf-16").removesuffix("-i")
        assert titles[name].split()[-1] in saved.content.decode(codec)


def test_the_reference_scanner_notes_no_charset(nginx, tmp_path):
    _, pages, _ = crawl_served_site(nginx, tmp_path, write_site, LOCATIONS, 1, "--links", "tse")
    assert not (pages / CHARSETS).exists()  # the reference crawl's directory holds only what the reference's does
