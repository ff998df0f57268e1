"""A report opened in headless chromium (Debian's package, driven by Playwright)."""

from __future__ import annotations

import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = shutil.which("chromium")
NO_CHROMIUM = "Debian's chromium is not installed (make test installs it as root)"
FLAGS = ["--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SHOTS = Path("/tmp/relevance-shots")  # a copy of the search pages' screenshots, for a person to look at


def keep_screenshot(shot: Path) -> None:
    """*shot*, which must be a PNG of some substance, copied into SHOTS."""
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and shot.stat().st_size > 5000
    SHOTS.mkdir(exist_ok=True)
    shutil.copyfile(shot, SHOTS / shot.name)


FIGURES = ("fig-depths", "fig-outcomes", "fig-response-times", "fig-page-sizes", "fig-timeline")


@dataclass
class Rendered:
    """What the browser saw of a page: problems (console errors, page errors, failed requests),
    every URL it requested, each figure's box, each total as shown, and a full-page screenshot."""

    problems: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    boxes: dict[str, dict | None] = field(default_factory=dict)
    totals: dict[str, str] = field(default_factory=dict)
    title: str = ""
    screenshot_size: tuple[int, int] = (0, 0)


def render_report(page_file: Path, screenshot: Path, width: int = 1280) -> Rendered:
    from playwright.sync_api import sync_playwright

    seen = Rendered()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[*FLAGS, "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.on("console", lambda message: seen.problems.append(f"console {message.type}: {message.text}"))
            page.on("pageerror", lambda error: seen.problems.append(f"page error: {error}"))
            page.on("requestfailed", lambda request: seen.problems.append(f"request failed: {request.url}"))
            page.on("request", lambda request: seen.requests.append(request.url))
            page.goto(page_file.as_uri())
            seen.title = page.title()
            seen.boxes = {figure: page.locator(f"#{figure} svg").bounding_box() for figure in FIGURES}
            for cell in page.locator("#totals td[data-total]").all():
                seen.totals[cell.get_attribute("data-total")] = cell.inner_text()
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    png = screenshot.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    seen.screenshot_size = struct.unpack(">II", png[16:24])
    return seen
