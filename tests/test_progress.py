import pytest

from tse_scrapy.rules.crawling.progress import progress_line

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

    assert is_found_link(scrapy.Request("http://a.test/", meta=meta)) is found
