"""The whole site read (issue 29): a small intranet of real pages (the installation guide's, several
languages) and real PDFs (Debian's reference manual, the shared-mime-info specification), served by
nginx, crawled with --pdf --sitemaps at depth 2, indexed and searched with tse query and the search
app: sitemap-only pages, PDFs by link and by Content-Type, a damaged PDF, duplicates and canonical
URLs (``<link>`` and ``Link:``).  Encodings and robots directives have their own files
(test_encodings_crawl.py, test_robotsmeta.py)."""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.conftest import ROOT, run_tse
from tests.support.sitecrawl import query_answers
from tse_scrapy.index.engine import QueryEngine
from tse_scrapy.index.storage import IndexReader
from tse_scrapy.rules.files import pagedir
from tse_scrapy.rules.files.pagenotes import read_page_notes
from tse_scrapy.search.app import create_app

FIXTURE = ROOT / "tests" / "fixtures" / "multilingual" / "pages"
MANUAL = Path("/usr/share/debian-reference/debian-reference.en.pdf")  # package debian-reference-en, 1.3 MB
SPEC = Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf")  # package shared-mime-info
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"

pytestmark = pytest.mark.skipif(
    not (MANUAL.is_file() and SPEC.is_file()),
    reason="Debian's debian-reference-en and shared-mime-info are not installed (make test installs them)",
)

LOCATIONS = """
        location = /docs/spec { default_type application/pdf; }
        location = /docs/en/print.html { add_header Link '</docs/en/ch04s06.html>; rel="canonical"'; }
"""


def build_site(root: Path, origin: str) -> None:
    docs = root / "docs"
    for language in ("en", "de", "fr", "ru"):
        shutil.copytree(FIXTURE / language, docs / language)
    en = docs / "en"
    shutil.copy(MANUAL, docs / "manual.pdf")
    shutil.copy(SPEC, docs / "spec")  # no extension: a PDF by its Content-Type only
    (docs / "broken.pdf").write_bytes(SPEC.read_bytes()[: SPEC.stat().st_size // 2])  # truncated
    # The same page under a second URL; a copy naming the original as canonical; one whose Link header does.
    shutil.copy(en / "ch01s01.html", en / "copy.html")
    page = (en / "ch02s05.html").read_text()
    alias = page.replace("<head>", '<head><link rel="canonical" href="ch02s05.html">', 1)
    (en / "alias.html").write_text(
        alias.replace("<body", "<body><p>Printable version</p", 1) if "<body" in alias else alias
    )
    (en / "print.html").write_text((en / "ch04s06.html").read_text().replace("</body>", "<p>Printed</p></body>"))
    links = ["en/ch01s01.html", "en/copy.html", "en/ch02s05.html", "en/alias.html", "en/ch04s06.html"]
    links += ["en/print.html", "manual.pdf", "spec", "broken.pdf", "fr/ch01s01.html"]
    anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
    (docs / "index.html").write_text(
        f"<html><head><title>Intranet</title></head><body><ul>{anchors}</ul></body></html>"
    )
    # Pages no link reaches, named only by the sitemaps: robots.txt -> an index -> a gzipped and a plain one.
    (root / "robots.txt").write_text(f"User-agent: *\nAllow: /\nSitemap: {origin}/sitemaps/index.xml\n")
    (root / "sitemaps").mkdir()
    (root / "sitemaps" / "index.xml").write_text(
        f'<sitemapindex xmlns="{NS}"><sitemap><loc>{origin}/sitemaps/de.xml.gz</loc></sitemap>'
        f"<sitemap><loc>{origin}/sitemaps/ru.xml</loc></sitemap></sitemapindex>"
    )
    de = "".join(f"<url><loc>{origin}/docs/de/{p.name}</loc></url>" for p in sorted((docs / "de").iterdir()))
    (root / "sitemaps" / "de.xml.gz").write_bytes(gzip.compress(f'<urlset xmlns="{NS}">{de}</urlset>'.encode()))
    ru = "".join(f"<url><loc>{origin}/docs/ru/{p.name}</loc></url>" for p in sorted((docs / "ru").iterdir()))
    (root / "sitemaps" / "ru.xml").write_text(f'<urlset xmlns="{NS}">{ru}</urlset>')


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The intranet crawled and indexed once: (origin, page directory, index, saved {path: docID}, crawl stderr,
    index stderr)."""
    from tests.support.nginxserver import NginxServer, nginx_binary

    if nginx_binary() is None:
        pytest.skip("nginx is not installed: run make nginx as root (make test does)")
    tmp = tmp_path_factory.mktemp("intranet")
    root = tmp / "site"
    root.mkdir()
    server = NginxServer(tmp / "hosts", tmp / "nginx", origin=root, locations=LOCATIONS)
    (tmp / "nginx").mkdir()
    build_site(root, server.url)
    server.start()
    try:
        pages = tmp / "pages"
        pages.mkdir()
        base = f"{server.url}/docs/"
        args = ("crawl", f"{base}index.html", pages, 2, "--prefix", base, "--pdf", "--sitemaps")
        crawl = run_tse(*args, "-s", "DOWNLOAD_DELAY=0")
        assert crawl.returncode == 0, crawl.stderr.decode()[-3000:]
        index = tmp / "index"
        indexed = run_tse("index", pages, index)
        assert indexed.returncode == 0, indexed.stderr.decode()
        saved = {}
        for path in pages.iterdir():
            if path.name.isdigit():
                url = path.read_bytes().split(b"\n", 1)[0].decode()
                saved[url.removeprefix(base)] = int(path.name)
        yield server.url, pages, index, saved, crawl.stderr.decode(), indexed.stderr.decode()
    finally:
        server.stop()


def search(pages: Path, index: Path, query: str) -> list[dict]:
    client = TestClient(create_app(QueryEngine(pages, IndexReader(index))))
    response = client.get("/api/search", params={"q": query, "rank": "relevance"})
    assert response.status_code == 200, response.text
    return response.json()["results"]


def test_pages_only_the_sitemaps_name_are_crawled(site):
    _, _, _, saved, stderr, _ = site
    for language in ("de", "ru"):
        names = sorted(p.name for p in (FIXTURE / language).iterdir())
        assert {f"{language}/{name}" for name in names} <= set(saved), language
    assert "sitemaps: 3 read, 0 cut" in stderr


def test_pdfs_are_saved_as_fetched_and_noted(site):
    _, pages, _, saved, _, _ = site
    for name, source in (("manual.pdf", MANUAL), ("spec", SPEC)):
        assert pagedir.read_page(pages, saved[name]).body == source.read_bytes(), name
    noted = {url.rsplit("/docs/", 1)[1] for url in read_page_notes(pages).pdfs}
    assert noted == {"manual.pdf", "spec", "broken.pdf"}


def test_a_damaged_pdf_is_saved_indexed_without_text_and_told(site):
    _, pages, _, saved, _, index_stderr = site
    assert (pages / str(saved["broken.pdf"])).is_file()
    assert re.search(rf"PDF {saved['broken.pdf']} \(.*broken\.pdf\) gave no text: damaged", index_stderr)
    assert "1 PDF(s) indexed without text" in index_stderr


def test_pdfs_are_found_by_their_titles_and_words(site):
    _, pages, index, saved, _, _ = site
    assert search(pages, index, "Shared MIME-info Database")[0]["docid"] == saved["spec"]
    top = search(pages, index, "Debian Reference Osamu Aoki")[0]
    assert top["docid"] == saved["manual.pdf"] and top["title"] == "Debian Reference" and top["pdf"] is True
    # The SPEC index holds their words too: tse query finds them (aptitude: the manual's, not the guide's pages').
    found = query_answers(pages, index, ["aptitude", "freedesktop"], "tse")
    assert saved["manual.pdf"] in [doc for doc, _ in found[0]]
    assert saved["spec"] in [doc for doc, _ in found[1]]


def test_a_pdf_result_can_be_read_and_downloaded(site):
    _, pages, index, saved, _, _ = site
    client = TestClient(create_app(QueryEngine(pages, IndexReader(index))))
    shown = client.get(f"/doc/{saved['spec']}")
    assert shown.status_code == 200 and shown.headers["content-type"] == "text/html; charset=utf-8"
    assert shown.headers["content-security-policy"].startswith("sandbox")
    assert "Shared MIME-info Database" in shown.text and "freedesktop.org" in shown.text
    pdf = client.get(f"/doc/{saved['spec']}.pdf")
    assert pdf.status_code == 200 and pdf.content == SPEC.read_bytes()
    assert pdf.headers["content-disposition"].startswith("attachment")
    assert client.get(f"/doc/{saved['en/ch01s01.html']}.pdf").status_code == 404
    # Under its banner: the text found in the PDF, and the PDF as fetched to download.
    banner = client.get(f"/saved/{saved['spec']}").text
    assert "It shows the text found in the PDF" in banner and f'<a href="/doc/{saved["spec"]}.pdf">' in banner
    assert "the text found in the PDF" not in client.get(f"/saved/{saved['en/ch01s01.html']}").text


def test_duplicates_and_canonical_pages_are_one_result(site):
    _, pages, index, saved, _, _ = site
    # The same page under two URLs: one result, the shortest URL, the other under "also at".
    results = [r for r in search(pages, index, "What is Debian") if r["url"].endswith(("copy.html", "ch01s01.html"))]
    en = [r for r in results if "/en/" in r["url"]]
    assert len(en) == 1 and en[0]["url"].endswith("en/copy.html") and en[0]["also"][0].endswith("en/ch01s01.html")
    # A page naming another as canonical (<link>, Link: header): the canonical one, the alias under it.
    for canonical, alias, query in (
        ("en/ch02s05.html", "en/alias.html", "Memory and Disk Space Requirements"),
        ("en/ch04s06.html", "en/print.html", "Automatic Installation"),
    ):
        results = search(pages, index, query)
        urls = [r["url"].rsplit("/docs/", 1)[1] for r in results]
        assert alias not in urls, (query, urls)
        shown = results[urls.index(canonical)]
        assert [url.rsplit("/docs/", 1)[1] for url in shown["also"]] == [alias]
    # Every page is still saved (SPEC 2).
    assert {"en/copy.html", "en/alias.html", "en/print.html"} <= set(saved)
