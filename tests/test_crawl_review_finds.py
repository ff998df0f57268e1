"""A reviewer's finds in the crawler, each crawled from a real server on 127.0.0.1."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.conftest import crawl_site
from tse_scrapy.devtools.siteserver import Rule
from tse_scrapy.rules.files.pagenotes import read_noindex

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


SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def _sitemap_site(root, url):
    """The seed links a.html; robots.txt names an index of two sitemaps; the first names an orphan
    page that links back to the seed, the second another orphan."""
    (root / "p").mkdir(parents=True)
    (root / "index.html").write_text('<html><body><a href="p/a.html">a</a></body></html>')
    (root / "p" / "a.html").write_text("<html><body>a, linked by the seed alone</body></html>")
    (root / "p" / "orphan1.html").write_text('<html><body><a href="/index.html">home</a></body></html>')
    (root / "p" / "orphan2.html").write_text("<html><body>orphan 2</body></html>")
    (root / "robots.txt").write_text(f"User-agent: *\nDisallow: /private/\nSitemap: {url}/smindex.xml\n")
    sitemaps = "".join(f"<sitemap><loc>{url}/{name}</loc></sitemap>" for name in ("sm1.xml", "sm2.xml"))
    (root / "smindex.xml").write_text(
        f'<?xml version="1.0"?><sitemapindex xmlns="{SITEMAP_NS}">{sitemaps}</sitemapindex>'
    )
    for name, page in (("sm1.xml", "orphan1.html"), ("sm2.xml", "orphan2.html")):
        entry = f"<url><loc>{url}/p/{page}</loc></url>"
        (root / name).write_text(f'<?xml version="1.0"?><urlset xmlns="{SITEMAP_NS}">{entry}</urlset>')


def test_the_seed_stays_at_depth_0_when_a_sitemaps_page_links_to_it(tmp_path, serve):
    # Every sitemap was read first, politely (a delay between requests): a page of the first sitemap,
    # fetched meanwhile, linked the seed, found at depth 1, and the seed's own request (depth 0) came
    # after it, dropped as a duplicate: a.html, which only the seed links, was never fetched at depth 1.
    root = tmp_path / "site"
    root.mkdir()
    server = serve(root)
    _sitemap_site(root, server.url)
    out = tmp_path / "out"
    out.mkdir()
    result = crawl_site(server, out, 1, "--sitemaps", "-s", "DOWNLOAD_DELAY=0.2")  # (0 reproduced it too, less surely)
    assert result.returncode == 0, result.stderr.decode()
    log = result.stdout.decode()
    assert f" 0   Fetched: {server.url}/index.html\n" in log, log
    assert f" 1    Fetched: {server.url}/p/a.html\n" in log, log
    for orphan in ("orphan1", "orphan2"):  # (the sitemaps' pages, at depth 0 too)
        assert f" 0   Fetched: {server.url}/p/{orphan}.html\n" in log, log
    pages = ["/index.html", "/p/a.html", "/p/orphan1.html", "/p/orphan2.html"]
    assert sorted(hit.target for hit in server.hits) == sorted(
        ["/robots.txt", "/smindex.xml", "/sm1.xml", "/sm2.xml", *pages]
    )


@pytest.mark.parametrize("depth", [2, 1])
def test_the_robots_meta_of_a_utf16_page_is_obeyed(tmp_path, serve, depth):
    # The head of a UTF-16 page was scanned as bytes ("<\0m\0e\0t\0a\0": no <meta>): its links were
    # followed and it was not noted noindex.  (At maxDepth its links are not read: noted all the same.)
    site = tmp_path / "site"
    (site / "p").mkdir(parents=True)
    (site / "p" / "followed.html").write_text("<html><body>followed</body></html>")
    server = serve(site)
    pages = {  # name -> (bytes, Content-Type)
        "u16-bom.html": (b"\xff\xfe", "utf-16-le", "text/html; charset=utf-16"),
        "u16be-bom.html": (b"\xfe\xff", "utf-16-be", "text/html; charset=UTF-16BE"),
        "u16le-header.html": (b"", "utf-16-le", "text/html; charset=UTF-16LE"),
    }
    links = "".join(f'<a href="{name}">{name}</a>' for name in pages)
    (site / "index.html").write_text(f'<html><body>{links}<a href="plain.html">plain</a></body></html>')
    (site / "plain.html").write_text('<html><body><a href="p/followed.html">followed</a></body></html>')
    for name, (mark, encoding, content_type) in pages.items():
        page = (
            '<html><head><meta name="robots" content="noindex,nofollow"><title>Ελληνικά</title></head>'
            f'<body><p>Ελληνικά</p><a href="p/never-{name}">never</a></body></html>'
        )
        server.rules[f"/{name}"] = Rule(body=mark + page.encode(encoding), headers={"Content-Type": content_type})
    out = tmp_path / "out"
    out.mkdir()
    result = crawl_site(server, out, depth)
    assert result.returncode == 0, result.stderr.decode()
    asked = sorted(hit.target for hit in server.hits)
    followed = ["/p/followed.html"] if depth == 2 else []
    assert asked == sorted(["/robots.txt", "/index.html", "/plain.html", *followed, *(f"/{n}" for n in pages)])
    assert read_noindex(out) == {f"{server.url}/{name}" for name in pages}
