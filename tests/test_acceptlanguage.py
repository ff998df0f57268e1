"""The reader's languages (rules/text/acceptlanguage.py) by table and property; their pages ranked first
by `tse serve` where lang= keeps no one language (tests/test_relevance.py holds the search itself)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.text.acceptlanguage import MAX_LANGUAGES, preferred_languages


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        # What browsers send (Firefox in Swiss French, Chrome in US English, Safari in Japanese).
        ("fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5", ["fr", "en", "de"]),
        ("en-US,en;q=0.9", ["en"]),
        ("ja-JP", ["ja"]),
        ("zh-CN,zh;q=0.9,en;q=0.8", ["zh", "en"]),
        ("pt-BR;q=0.5, ko", ["ko", "pt"]),  # by weight, not as written
        ("de;q=0.5, fr;q=0.5", ["de", "fr"]),  # equals: as written
        ("EN-gb", ["en"]),
        ("iw, fre", ["he", "fr"]),  # withdrawn and three-letter codes as ISO 639-1 writes them
        ("haw", ["haw"]),  # a language of no two-letter code
        ("en ; q = 0.8", ["en"]),  # spaces around ; and =
        ("en;q=0, fr", ["fr"]),  # a weight of 0: not wanted
        ("*", []),
        ("und, mul", []),  # no one language
        ("en;q=abc, de", ["de"]),  # a weight that cannot be read: the tag is left out
        ("x;q=2, en;q=1.5", []),  # weights past 1
        ("", []),
        (None, []),
        ("<script>, en", ["en"]),
    ],
)
def test_preferred_languages(header, expected):
    assert preferred_languages(header) == expected


def test_a_long_header_is_read_in_part():
    header = ", ".join(["zz"] * 30 + ["en"])  # the 31st tag is past MAX_LANGUAGES
    assert preferred_languages(header) == ["zz"] and MAX_LANGUAGES < 31
    assert preferred_languages("en," + " " * 5_000 + "fr") == ["en"]  # past MAX_HEADER


@given(st.text(max_size=300))
def test_any_header_gives_distinct_codes_never_an_error(header):
    found = preferred_languages(header)
    assert len(found) == len(set(found)) <= MAX_LANGUAGES
    assert all(code.isascii() and code.isalpha() and code.islower() and 2 <= len(code) <= 3 for code in found)


@given(st.lists(st.sampled_from(["en", "fr", "de-AT", "ja", "pt-BR", "zh"]), min_size=1, max_size=6))
def test_tags_without_weights_keep_their_order(tags):
    assert preferred_languages(", ".join(tags)) == list(dict.fromkeys(tag[:2] for tag in tags))
