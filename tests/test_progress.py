from urllib.parse import unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.crawling.progress import found_link, progress_line

L = "http://cs50tse.cs.dartmouth.edu/tse/letters/"


# Lines from the reference crawler's output in the implementation spec.
@pytest.mark.parametrize(
    "depth, word, url, line",
    [
        (0, "Fetched", L + "index.html", " 0   Fetched: " + L + "index.html"),
        (0, "Scanning", L + "index.html", " 0  Scanning: " + L + "index.html"),
        (
            1,
            "IgnExtrn",
            "https://en.wikipedia.org/wiki/Algorithm",
            " 1   IgnExtrn: https://en.wikipedia.org/wiki/Algorithm",
        ),
        (2, "Found", L + "C.html", " 2       Found: " + L + "C.html"),
        (3, "Fetched", L + "E.html", " 3      Fetched: " + L + "E.html"),
        (5, "IgnDupl", L + "B.html", " 5        IgnDupl: " + L + "B.html"),
        (10, "Added", "u", "10" + " " * (1 + 10 + 4) + "Added: u"),  # 1 + depth + (9 - len)
    ],
)
def test_progress_line_matches_reference(depth, word, url, line):
    assert progress_line(depth, word, url) == line + "\n"


@pytest.mark.parametrize(
    "meta, found",
    [
        ({"tse_found_at": 0}, True),  # a link, not yet handed out
        ({"tse_found_at": 0, "tse_token": 3}, False),  # its redirect or retry (one process)
        ({"tse_found_at": 0, "tse_lease": 7}, False),  # its redirect or retry (a distributed worker)
        ({"depth": 0}, False),  # a seed
    ],
)
def test_is_found_link(meta, found):
    import scrapy

    from tse_scrapy.crawl.progresslog import is_found_link

    assert found_link(meta) is found
    assert is_found_link(scrapy.Request("http://a.test/", meta=meta)) is found


@given(st.sets(st.sampled_from(["tse_found_at", "tse_token", "tse_lease", "depth", "tse_revisit"])))
def test_a_found_link_is_one_not_yet_handed_out(keys):
    # (The update extension tells a page's links by it, as the scheduler and the progress log do.)
    assert found_link(dict.fromkeys(keys, 0)) is ("tse_found_at" in keys and not keys & {"tse_token", "tse_lease"})


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://h/a.html", "http://h/a.html"),
        ("http://h/é ü/ЖЖ.html", "http://h/é ü/ЖЖ.html"),  # letters of any script as they are
        ("http://h/e\x1b[2J.html", "http://h/e%1B[2J.html"),  # ESC: clear the screen
        ("http://h/\x1b]0;title\x07", "http://h/%1B]0;title%07"),  # set the window's title
        ("http://h/\x9b31m", "http://h/%C2%9B31m"),  # C1's CSI
        ("http://h/a\x08\x7f\x00\t\n\r", "http://h/a%08%7F%00%09%0A%0D"),
        ("http://h/%1B", "http://h/%1B"),  # already encoded: as it is
    ],
)
def test_a_urls_control_characters_are_percent_encoded(url, shown):
    assert progress_line(2, "Found", url) == f" 2       Found: {shown}\n"


@given(st.text(max_size=60))
def test_a_progress_line_holds_no_control_character_but_its_end(url):
    line = progress_line(1, "Added", url)
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in line[:-1]) and line[-1] == "\n"
    if all(32 <= ord(c) < 0x7F or ord(c) > 0x9F for c in url):
        assert line == f" 1      Added: {url}\n"  # the reference's line, byte for byte
    else:
        assert unquote(line[len(" 1      Added: ") : -1], errors="surrogateescape") == unquote(
            url, errors="surrogateescape"
        )
