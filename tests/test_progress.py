import pytest

from tse_scrapy.progress import progress_line

L = "http://cs50tse.cs.dartmouth.edu/tse/letters/"


# Lines from the reference crawler's output in the implementation spec.
@pytest.mark.parametrize("depth, word, url, line", [
    (0, "Fetched", L + "index.html", " 0   Fetched: " + L + "index.html"),
    (0, "Scanning", L + "index.html", " 0  Scanning: " + L + "index.html"),
    (1, "IgnExtrn", "https://en.wikipedia.org/wiki/Algorithm",
     " 1   IgnExtrn: https://en.wikipedia.org/wiki/Algorithm"),
    (2, "Found", L + "C.html", " 2       Found: " + L + "C.html"),
    (3, "Fetched", L + "E.html", " 3      Fetched: " + L + "E.html"),
    (5, "IgnDupl", L + "B.html", " 5        IgnDupl: " + L + "B.html"),
    (10, "Added", "u", "10" + " " * (1 + 10 + 4) + "Added: u"),  # 1 + depth + (9 - len)
])
def test_progress_line_matches_reference(depth, word, url, line):
    assert progress_line(depth, word, url) == line + "\n"
