"""A review's finds (pages in any encoding, PDFs, duplicates), each on a real site served on 127.0.0.1,
crawled by ``tse crawl``, indexed by ``tse index`` and asked by ``tse query --rank relevance``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import crawl_site
from tests.support.inprocess import tse_here, tse_ok_here
from tests.support.pdfs import pages_pdf, stream
from tests.support.sitecrawl import query_lines
from tse_scrapy.devtools.siteserver import Rule, SiteServer
from tse_scrapy.rules.files.pagenotes import read_page_notes


def _page(title: str, body: str, head: str = "") -> str:
    return f"<!DOCTYPE html><html><head>{head}<title>{title}</title></head><body><p>{body}</p></body></html>"


# name -> (the file's bytes, linked from index.html)
SITE = {
    # A UTF-16 page (its byte order mark) naming its original as canonical: its raw bytes hold no
    # "canonical" an ASCII reader finds.
    "original16.html": _page("Original", "alphaword bravoword the original text").encode(),
    "copy16.html": _page(
        "Copy", "alphaword bravoword a copy for tracking", '<link rel="canonical" href="original16.html">'
    ).encode("utf-16"),
    # A windows-1251 page naming its original by a Cyrillic path, which a browser reads in the page's
    # encoding and asks for as UTF-8 (/%D1%81%D1%82...): read as windows-1252, it named another URL.
    "статья.html": _page("Статья", "charlieword Москва оригинал").encode(),
    "копия.html": _page(
        "Копия",
        "charlieword Москва копия",
        '<meta charset="windows-1251"><link rel="canonical" href="статья.html">',
    ).encode("cp1251"),
    # The same in Shift_JIS, declared by the HTTP header only (HEADERS).
    "記事.html": _page("記事", "deltaword 東京 原本").encode(),
    "写し.html": _page("写し", "deltaword 東京 写し", '<link rel="canonical" href="記事.html">').encode("cp932"),
    # A windows-1251 page declared nowhere whose first 64 KB are ASCII but its title's 11 bytes (an
    # inline script): detection read those only, too few, and the page was windows-1252.
    "большая.html": _page(
        "Новосибирск",
        'Столица России: поисковая система golfword. <a href="ссылка.html">далее</a>',
        "<script>" + "var data = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];\n" * 1700 + "</script>",
    ).encode("cp1251"),
    # A page under a <base> in another folder, linking there by relative and Cyrillic hrefs: the anchor
    # text goes to the pages the crawl fetched (each of a pair scored alike but for it).
    "anchors.html": _page(
        "Anchors",
        '<a href="t.html">limaword</a> <a href="шлюз2.html">mikeword</a>',
        '<base href="/anchor/sub/">',
    ).encode(),
    "anchor/t.html": _page("T", "limaword alpha").encode(),
    "anchor/sub/t.html": _page("T", "limaword bravo").encode(),
    "anchor/sub/шлюз2.html": _page("T", "mikeword alpha").encode(),
    "anchor/sub/other2.html": _page("T", "mikeword bravo").encode(),
}
# A PDF naming the page it is a copy of in its Link header (its only way to name one), and that page.
SITE["spec.html"] = _page("Spec", "novemberword oscarword the specification").encode()
SITE["spec.pdf"] = pages_pdf([4], [stream(b"BT /F1 12 Tf 72 720 Td (novemberword oscarword the specification) Tj ET")])
# Linked from a page of SITE only.
LINKED = {"ссылка.html": _page("Link", "hotelword").encode()}
HEADERS = {
    "/%E5%86%99%E3%81%97.html": {"Content-Type": "text/html; charset=Shift_JIS"},
    "/spec.pdf": {"Content-Type": "application/pdf", "Link": '<spec.html>; rel="canonical"'},
}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, Path]:
    """The site crawled (depth 2) and indexed: (the page directory, the index file)."""
    root = tmp_path_factory.mktemp("review_i")
    served = root / "site"
    served.mkdir()
    for name, data in {**SITE, **LINKED}.items():
        (served / name).parent.mkdir(parents=True, exist_ok=True)
        (served / name).write_bytes(data)
    links = "".join(f'<a href="{name}">{name}</a> ' for name in SITE)
    (served / "index.html").write_text(_page("Index", links), encoding="utf-8")
    pages, index = root / "pages", root / "index"
    pages.mkdir()
    server = SiteServer(served)
    for path, headers in HEADERS.items():
        server.rules[path] = Rule(headers=headers)
    with server:
        done = crawl_site(server, pages, 2, "--pdf")
        assert done.returncode == 0, done.stderr.decode()[-2000:]
    tse_ok_here("index", pages, index)
    return pages, index


def _results(pages: Path, index: Path, query: str) -> list[tuple[str, list[str]]]:
    """``tse query --rank relevance``'s results for *query*: (URL, the URLs "also at" under it) each."""
    return [(url, also) for url, _, also in _scored(pages, index, query)]


def _scored(pages: Path, index: Path, query: str) -> list[tuple[str, float, list[str]]]:
    """``tse query --rank relevance``'s results for *query*: (URL, score, the URLs "also at" under it) each."""
    done = tse_here("query", pages, index, "--rank", "relevance", input=query_lines([query]))
    assert done.returncode == 0, done.stderr.decode()
    results: list[tuple[str, float, list[str]]] = []
    for line in done.stdout.decode().splitlines():
        if found := re.match(r"score +(\S+) doc +\d+: (\S+)$", line):
            results.append((found.group(2), float(found.group(1)), []))
        elif found := re.match(r" +also at doc +\d+: (\S+)$", line):
            results[-1][2].append(found.group(1))
    return results


@pytest.mark.parametrize(
    ("query", "original", "copy"),
    [
        ("alphaword", "original16.html", "copy16.html"),
        ("charlieword", "%D1%81%D1%82%D0%B0%D1%82%D1%8C%D1%8F.html", "%D0%BA%D0%BE%D0%BF%D0%B8%D1%8F.html"),
        ("deltaword", "%E8%A8%98%E4%BA%8B.html", "%E5%86%99%E3%81%97.html"),
    ],
)
def test_a_canonical_link_is_read_in_the_pages_encoding(site, query, original, copy):
    """A page in UTF-16, windows-1251 or Shift_JIS whose head names its original as canonical is one
    result with it ("also at"), as a UTF-8 page is; it was two results (the <link> read from the raw
    bytes as UTF-8 or windows-1252: none found in UTF-16, another URL named in the others)."""
    pages, index = site
    results = _results(pages, index, query)
    assert [(url.rsplit("/", 1)[1], [alias.rsplit("/", 1)[1] for alias in also]) for url, also in results] == [
        (original, [copy])
    ]


def test_a_page_whose_first_64_kb_are_ascii_is_read_by_its_text(site):
    """An undeclared windows-1251 page whose text follows 64 KB of inline script: its title and words
    are found, and the link it names in Cyrillic is followed (it was read as windows-1252: "Íîâîñèáèðñê",
    and the crawl asked for /%C3%B1%C3%B1%C3%BB... , a 404)."""
    pages, index = site
    big = "%D0%B1%D0%BE%D0%BB%D1%8C%D1%88%D0%B0%D1%8F.html"
    assert [url.rsplit("/", 1)[1] for url, _ in _results(pages, index, "новосибирск")] == [big]  # its title
    assert [url.rsplit("/", 1)[1] for url, _ in _results(pages, index, "столица")] == [big]
    linked = "%D1%81%D1%81%D1%8B%D0%BB%D0%BA%D0%B0.html"
    assert [url.rsplit("/", 1)[1] for url, _ in _results(pages, index, "hotelword")] == [linked]


@pytest.mark.parametrize(
    ("query", "linked", "other"),
    [
        ("limaword", "anchor/sub/t.html", "anchor/t.html"),  # "t.html" under <base href="/anchor/sub/">
        ("mikeword", "anchor/sub/%D1%88%D0%BB%D1%8E%D0%B72.html", "anchor/sub/other2.html"),
    ],
)
def test_anchor_text_goes_to_the_page_the_link_names(site, query, linked, other):
    """The anchor text of a link scores the page the crawl fetched for it, above its twin (the same
    words but for the anchor text), resolved against the page's <base> and written as the crawl's
    request: it went to /anchor/t.html, which the page does not link to, and the Cyrillic link's to no
    page at all (the target kept unencoded)."""
    pages, index = site
    scores = {url.split("/", 3)[3]: score for url, score, _ in _scored(pages, index, query)}
    assert scores[linked] > scores[other]


def test_a_pdf_naming_its_page_as_canonical_in_its_link_header_is_one_result_with_it(site):
    """A PDF whose ``Link: <spec.html>; rel="canonical"`` names the page it is a copy of (a PDF has no
    head: the header is its only way, the one search engines document for it): one result, the PDF
    "also at" (it was noted nowhere: two results)."""
    pages, index = site
    found = [
        (url.rsplit("/", 1)[1], [also.rsplit("/", 1)[1] for also in at])
        for url, at in _results(pages, index, "novemberword")
    ]
    assert found == [("spec.html", ["spec.pdf"])], found


def test_an_import_notes_a_pdfs_canonical_link_header_as_the_crawl_does(tmp_path):
    """``tse import`` of the crawl's WARC notes the PDF's canonical URL as the crawl did (it noted a
    PDF's type only: its copy and its page were two results again after an import)."""
    served = tmp_path / "site"
    served.mkdir()
    (served / "index.html").write_text(_page("Index", '<a href="spec.html">s</a> <a href="spec.pdf">p</a>'))
    for name in ("spec.html", "spec.pdf"):
        (served / name).write_bytes(SITE[name])
    crawled, imported, warc = tmp_path / "crawled", tmp_path / "imported", tmp_path / "crawl.warc.gz"
    crawled.mkdir()
    server = SiteServer(served)
    server.rules["/spec.pdf"] = Rule(headers=HEADERS["/spec.pdf"])
    with server:
        done = crawl_site(server, crawled, 1, "--pdf", "--warc", warc)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
    imported.mkdir()
    tse_ok_here("import", "--pdf", warc, imported)
    expected = {f"{server.url}/spec.pdf": f"{server.url}/spec.html"}
    assert read_page_notes(crawled).canonicals == read_page_notes(imported).canonicals == expected
