"""rank=relevance in a real browser: a real `tse serve` on the multilingual fixture, searched in Debian's
chromium (driven by Playwright) in Japanese and in Arabic, the way a reader types a query."""

from __future__ import annotations

import pytest

from tests.conftest import BIN, ROOT, clean_env
from tests.support.browser import CHROMIUM, FLAGS, NO_CHROMIUM, keep_screenshot
from tests.support.multilingual import indexed_fixture_directory, page_named
from tests.support.serving import tse_serve


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pages, index = indexed_fixture_directory(tmp_path_factory.mktemp("multilingual-serve"))
    with tse_serve([str(BIN / "tse"), "serve", str(pages), str(index)], clean_env(), ROOT) as run:
        yield run.base
    assert run.process.returncode == 0, run.stderr


@pytest.fixture(scope="module")
def browser():
    """One Chromium for the module's searches (each in a page, and a browser context, of its own)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=[*FLAGS, "--no-first-run"])
        try:
            yield launched
        finally:
            launched.close()


SEARCHES = [  # (name, query, the page it finds first, what is marked first in its snippet, the snippet's direction)
    ("japanese", "スモークテスト", "ja/ch07s01.html", "スモークテスト", "ltr"),
    ("arabic", "اختر طابعة شبكة", "ar/printers.html", "اختر", "rtl"),
]


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
@pytest.mark.parametrize(
    ("name", "query", "expected", "first_mark", "direction"), SEARCHES, ids=[s[0] for s in SEARCHES]
)
def test_search_in_a_real_browser(server, browser, tmp_path, name, query, expected, first_mark, direction):
    page_expected = page_named(expected)
    problems = []
    shot = tmp_path / f"relevance-{name}.png"
    page = browser.new_page(viewport={"width": 900, "height": 900})
    try:
        page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
        page.on("console", lambda message: problems.append(f"console {message.type}: {message.text}"))
        page.goto(f"{server}/")
        page.get_by_label("Search the crawled pages").fill(query)
        page.keyboard.press("Enter")
        page.wait_for_url("**/search?*")
        first = page.locator("ol.results li").first
        assert first.is_visible()
        assert first.locator(".title").inner_text() == page_expected.title
        assert first.get_attribute("lang") == page_expected.lang
        marks = first.locator(".snippet mark")
        assert marks.count() >= 1 and marks.first.is_visible()
        assert marks.first.inner_text() == first_mark
        box = marks.first.bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0
        # dir="auto" resolves from the text itself: right to left for Arabic, left to right for Japanese.
        snippet, title = first.locator(".snippet"), first.locator(".title")
        assert snippet.get_attribute("dir") == "auto" and title.get_attribute("dir") == "auto"
        assert snippet.evaluate("element => getComputedStyle(element).direction") == direction
        assert title.evaluate("element => getComputedStyle(element).direction") == direction
        page.screenshot(path=str(shot), full_page=True)
    finally:
        page.context.close()
    assert not problems, problems
    keep_screenshot(shot)
