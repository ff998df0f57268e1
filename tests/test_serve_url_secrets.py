"""``tse serve`` shows no password of a page's URL (``http://user:s3cretpass@host/?password=hunter2``, as
an archive or a crawl may hold one): not in the results page, the API, the saved copy's page or its frame's
title, nor in the ``<base>`` of the copy; it is masked as the CLI masks it (``mask_url``), and no link
carries it.  A real ``tse index`` and ``tse serve`` of page files written as the crawler writes them."""

from __future__ import annotations

import json
import re
import urllib.request

from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import BIN, ROOT, clean_env, run_tse
from tests.support.pages import write_pages
from tests.support.serving import tse_serve
from tse_scrapy.rules.crawling.secrets import mask_url
from tse_scrapy.search import app

SECRET_URL = "http://alice:s3cretpass@example.org/private/page.html?user=alice&password=hunter2&x=1"
ALSO_URL = "http://bob:0therpass@example.org/copy.html"
PLAIN_URL = "http://example.org/plain.html"
BODY = b"<html><head><title>Members</title></head><body><p>zebracanary <a href=n.html>n</a></p></body></html>"
UNTITLED = b"<html><body><p>untitledcanary only words</p></body></html>"


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode("utf-8", "replace")


def test_no_password_of_a_url_is_shown(tmp_path):
    pages = write_pages(
        tmp_path / "pages",
        {
            1: (SECRET_URL, 0, BODY),
            2: (ALSO_URL, 0, BODY),  # the same page: "also at" under the first
            3: (PLAIN_URL, 0, b"<html><head><title>Plain</title></head><body><p>zebracanary plain</p></body></html>"),
            4: ("http://carol:pw4carol@example.org/untitled.html", 0, UNTITLED),  # its URL stands for its title
        },
    )
    index = tmp_path / "index"
    assert run_tse("index", pages, index).returncode == 0
    with tse_serve([str(BIN / "tse"), "serve", str(pages), str(index)], clean_env(), ROOT) as run:
        shown = {
            "results": _get(f"{run.base}/search?q=zebracanary"),
            "untitled": _get(f"{run.base}/search?q=untitledcanary"),
            "api": _get(f"{run.base}/api/search?q=zebracanary"),
            "saved": _get(f"{run.base}/saved/1"),
            "copy": _get(f"{run.base}/doc/1"),
        }
    for name, text in shown.items():
        for secret in ("s3cretpass", "hunter2", "0therpass", "pw4carol"):
            assert secret not in text, (name, secret)
    assert "http://alice:***@example.org/private/page.html?user=alice&amp;password=***&amp;x=1" in shown["results"]
    assert "http://bob:***@example.org/copy.html" in shown["results"]  # (one is "also at" under the other)
    assert "http://carol:***@example.org/untitled.html" in shown["untitled"]
    assert "http://alice:***@example.org/" in shown["saved"]
    # The page with no secret is linked to; those with one are not (a link would carry it).
    assert f'href="{PLAIN_URL}"' in shown["results"]
    assert not re.search(r'href="http://(alice|bob)', shown["results"] + shown["saved"])
    results = json.loads(shown["api"])["results"]
    shown_urls = {url for result in results for url in [result["url"], *result["also"]]}
    assert shown_urls == {mask_url(SECRET_URL), mask_url(ALSO_URL), PLAIN_URL}
    # The copy's relative links still lead to the site: its <base> names the URL without the password.
    assert '<base href="http://alice@example.org/private/page.html?user=alice&amp;password=&amp;x=1"' in shown["copy"]
    assert run.process.returncode == 0, run.stderr


_USERINFO = st.text(alphabet="abcXYZ019-._~%!$'()*+,;=", max_size=20)


@given(_USERINFO, _USERINFO.filter(bool), st.text(alphabet="ab/.-?&=#@:%", max_size=30))
def test_shown_urls_mask_as_the_cli_masks(user, password, rest):
    url = f"http://{user}:{password}@host/{rest}?pwd={password}"
    assert app.shown_url(url) == mask_url(url)[: app.SHOWN_URL_CHARACTERS] + (
        " \u2026" if len(mask_url(url)) > app.SHOWN_URL_CHARACTERS else ""
    )
    assert mask_url(url).startswith(f"http://{user}:***@host/")
    assert mask_url(url, "").startswith(f"http://{user}@host/")


@given(st.text(max_size=200))
def test_any_text_is_masked_without_error_and_masking_again_changes_nothing(text):
    assert mask_url(mask_url(text)) == mask_url(text)
