"""A reviewer's finds in the crawler, each crawled from a real server on 127.0.0.1."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.conftest import crawl_site
from tse_scrapy.devtools.siteserver import Rule

# The same page in legacy encodings and UTF-16, each declared as sites declare them (the HTTP header
# alone, or nowhere), each linking to a path in its own script: name -> (encoding, Content-Type, link).
JAPANESE = "日本語のページです。東京の天気と大阪の地図を見てください。ここには多くの情報があります。"
TEXTS = {
    "ja": JAPANESE,
    "ko": "한국어 페이지입니다. 서울의 날씨와 부산의 지도를 보세요. 여기에는 많은 정보가 있습니다.",
    "zh": "这是中文页面。请看北京的天气和上海的地图。这里有很多信息。",
    "ru": "Это русская страница. Посмотрите погоду в Москве и карту Петербурга. Здесь много сведений.",
    "el": "Αυτή είναι μια ελληνική σελίδα. Δείτε τον καιρό στην Αθήνα και τον χάρτη της Θεσσαλονίκης.",
    "fr": "Voilà une page française: le café, la crème brûlée et les élèves à l'école.",
}
ENCODED_PAGES = {
    "sjis-header.html": ("shift_jis", "text/html; charset=Shift_JIS", "ja", "ссылка/日本語.html"),
    "sjis-none.html": ("shift_jis", "text/html", "ja", "ссылка/東京.html"),
    "euckr-header.html": ("euc-kr", "text/html; charset=EUC-KR", "ko", "ссылка/한국어.html"),
    "gb18030-header.html": ("gb18030", "text/html; charset=GB18030", "zh", "ссылка/中文.html"),
    "cp1251-none.html": ("cp1251", "text/html", "ru", "ссылка/страница.html"),
    "greek-header.html": ("iso-8859-7", "text/html; charset=ISO-8859-7", "el", "σύνδεσμος/σελίδα.html"),
    "utf16le-header.html": ("utf-16-le", "text/html; charset=UTF-16LE", "ja", "ссылка/σελίδα/日本.html"),
    "latin1-none.html": ("latin-1", "text/html", "fr", "café/crème.html"),
}


def _encoded_site(root):
    """The site: an index linking to each encoded page, and the pages their links name (as files)."""
    root.mkdir()
    (root / "index.html").write_text("".join(f'<a href="{name}">{name}</a>' for name in ENCODED_PAGES))
    for _, _, _, link in ENCODED_PAGES.values():
        (root / link).parent.mkdir(parents=True, exist_ok=True)
        (root / link).write_text(f"<html><body>{link}</body></html>")
    return root


@pytest.mark.parametrize("links", ["html", "tse"])
def test_links_of_a_page_in_a_legacy_encoding_are_read_in_its_encoding(tmp_path, serve, links):
    # A page declared in its Content-Type alone (or nowhere) was scanned as UTF-8: its links to
    # /ссылка/... were asked for as /%EF%BF%BD... (--links html) or its bytes as Latin-1 letters, each
    # encoded again (--links tse), and a UTF-16 page gave none.  The indexer reads these pages right.
    server = serve(_encoded_site(tmp_path / "site"))
    for name, (encoding, content_type, text, link) in ENCODED_PAGES.items():
        page = (
            f"<html><head><title>{TEXTS[text][:12]}</title></head><body><p>{TEXTS[text]}</p>"
            f'<a href="{link}">{TEXTS[text][:5]}</a> <a href="/p/{name}">ascii</a></body></html>'
        )
        server.rules[f"/{name}"] = Rule(body=page.encode(encoding), headers={"Content-Type": content_type})
    out = tmp_path / "out"
    out.mkdir()
    result = crawl_site(server, out, 2, "--links", links, "-s", "RETRY_TIMES=0")
    assert result.returncode == 0, result.stderr.decode()
    asked = {hit.target for hit in server.hits}
    # A browser asks for a path in UTF-8, percent-encoded, whatever the page's encoding.
    expected = {"/robots.txt", "/index.html"}
    for name, (_, _, _, link) in ENCODED_PAGES.items():
        expected |= {f"/{name}", f"/p/{name}", quote(f"/{link}")}
    assert asked == expected, sorted(asked ^ expected)
    log = result.stdout.decode()
    for name, (_, _, _, link) in ENCODED_PAGES.items():
        assert f"Fetched: {server.url}{quote('/' + link)}\n" in log, (name, log)
