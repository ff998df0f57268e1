"""The multilingual fixture (tests/fixtures/multilingual/pages/: real pages in twelve languages) as a
page directory, and what the tests know of each page, read with plain regular expressions (never with
the project's own code): its title, its visible text, its language."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from html import unescape
from pathlib import Path

from tests.conftest import ROOT
from tests.support.pages import write_pages

FIXTURE = ROOT / "tests" / "fixtures" / "multilingual" / "pages"
# The guide's pages are served at https://d-i.debian.org/manual/<lang>.amd64/<name>; the Arabic and
# Persian pages were put together from gettext catalogs and live nowhere: a reserved name for them.
GUIDE_URL = "https://d-i.debian.org/manual/{folder}.amd64/{name}"
CATALOG_URL = "http://gettext-catalogs.invalid/{folder}/{name}"

_TITLE = re.compile(r"<title>(.*?)</title>", re.S | re.I)
_HTML_LANG = re.compile(r"<html\b[^>]*\blang=\"([^\"]+)\"", re.I)
_INVISIBLE = re.compile(r"<head\b.*?</head>|<script\b.*?</script>|<style\b.*?</style>|<!--.*?-->", re.S | re.I)
_TAG = re.compile(r"<[^>]*>")


@dataclass(frozen=True)
class FixturePage:
    doc_id: int
    name: str  # "ja/ch01s01.html"
    url: str
    body: bytes
    lang: str  # the page's <html lang>, else its folder's language: two letters

    @property
    def html(self) -> str:
        return self.body.decode("utf-8")

    @property
    def title(self) -> str:
        return " ".join(unescape(_TITLE.search(self.html).group(1)).split())

    @property
    def text(self) -> str:
        """The visible text of the body, tags replaced by spaces, entities decoded, whitespace collapsed."""
        return " ".join(unescape(_TAG.sub(" ", _INVISIBLE.sub(" ", self.html))).split())


@cache
def fixture_pages() -> tuple[FixturePage, ...]:
    """Every page of the fixture, docIDs 1.. in the order of their names."""
    pages = []
    for doc_id, path in enumerate(sorted(FIXTURE.glob("*/*.html")), start=1):
        folder, name = path.parent.name, path.name
        body = path.read_bytes()
        declared = _HTML_LANG.search(body.decode("utf-8"))
        lang = (declared.group(1) if declared else folder)[:2].lower()
        template = CATALOG_URL if declared else GUIDE_URL
        pages.append(FixturePage(doc_id, f"{folder}/{name}", template.format(folder=folder, name=name), body, lang))
    return tuple(pages)


def page_named(name: str) -> FixturePage:
    (page,) = [page for page in fixture_pages() if page.name == name]
    return page


def write_fixture_directory(directory: Path) -> Path:
    """The fixture as the page directory a crawl of it would be: ``.crawler``, then ``1, 2, ...``."""
    pages = fixture_pages()
    return write_pages(directory, {page.doc_id: (page.url, 0 if page.doc_id == 1 else 1, page.body) for page in pages})


def indexed_fixture_directory(root: Path) -> tuple[Path, Path]:
    """The fixture's page directory (*root*/pages) and its index (*root*/index, with its search index
    beside it), built as `tse index` builds it, in this process (a set-up)."""
    from tests.support.inprocess import tse_ok_here

    pages = write_fixture_directory(root / "pages")
    index = root / "index"
    tse_ok_here("index", pages, index)
    assert index.with_name(index.name + ".search").is_file()
    return pages, index
