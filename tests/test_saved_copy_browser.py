"""A saved copy in a real browser: real pages of the installation guide in Japanese, served by a site
server, crawled by `tse crawl`, indexed, served by a real `tse serve`, and opened in Debian's chromium
(driven by Playwright) from a result's "saved copy" link, as a reader would."""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime

import pytest

from tests.conftest import BIN, ROOT, clean_env, crawl_site, run_tse
from tests.support.browser import CHROMIUM, FLAGS, NO_CHROMIUM, keep_screenshot
from tests.support.serving import tse_serve

FIXTURE = ROOT / "tests" / "fixtures" / "multilingual" / "pages" / "ja"


@pytest.fixture
def served(tmp_path, serve):
    site = tmp_path / "site"
    shutil.copytree(FIXTURE, site)
    server = serve(site)
    pages = tmp_path / "pages"
    pages.mkdir()
    crawled = crawl_site(server, pages, 0, seed="ch07s01.html")
    assert crawled.returncode == 0, crawled.stderr.decode()
    indexed = run_tse("index", pages, tmp_path / "index")
    assert indexed.returncode == 0, indexed.stderr.decode()
    with tse_serve([str(BIN / "tse"), "serve", str(pages), str(tmp_path / "index")], clean_env(), ROOT) as run:
        yield run.base, server.url, pages
    assert run.process.returncode == 0, run.stderr


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_a_saved_copy_is_shown_under_a_banner_and_its_links_lead_to_the_site(served, tmp_path):
    from playwright.sync_api import sync_playwright

    base, site, pages = served
    url = f"{site}/ch07s01.html"
    saved = datetime.fromtimestamp((pages / "1").stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC")
    problems: list[str] = []
    shot = tmp_path / "saved-copy.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[*FLAGS, "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            # (The copy's own stylesheet is refused by its sandbox, as meant: a console message, no page error.)
            page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
            page.goto(f"{base}/search?q=スモークテスト")
            page.locator("ol.results li").first.get_by_role("link", name="saved copy").click()
            page.wait_for_url(f"{base}/saved/1")
            banner = page.locator(".saved")
            assert banner.is_visible()
            text = banner.inner_text()
            assert url in text and saved in text and "may have changed" in text, text
            assert banner.get_by_role("link", name=url).get_attribute("href") == url
            # The copy, in its frame: the page's own text, shown, its heading visible.
            frame = page.frame_locator("iframe.copy")
            heading = frame.locator("h2, h1").first
            assert heading.is_visible()
            assert "スモークテスト" in frame.locator("body").inner_text()
            box = page.locator("iframe.copy").bounding_box()
            assert box and box["width"] > 900 and box["height"] > 300, box
            page.screenshot(path=str(shot), full_page=True)
            # A link of the copy (its "next" page, relative) leads the window to the site, not the frame.
            frame.locator('a[accesskey="n"]').first.click()
            page.wait_for_url(re.compile(re.escape(f"{site}/") + r"ch07s02\.html"))
        finally:
            browser.close()
    assert not problems, problems
    keep_screenshot(shot)
