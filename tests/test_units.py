"""Sizes for people (rules/crawling/units.py)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.crawling.units import format_size


@pytest.mark.parametrize(
    "count, shown",
    [
        (0, "0 bytes"),
        (1, "1 bytes"),
        (999, "999 bytes"),
        (1000, "1.0 kB"),
        (8731, "8.7 kB"),
        (904_500, "904.5 kB"),
        (999_949, "999.9 kB"),
        (1_000_000, "1.0 MB"),
        (195_200_000, "195.2 MB"),
        (12_680_946, "12.7 MB"),
        (2_500_000_000, "2.5 GB"),
        (1_000_000_000_000, "1.0 TB"),
        (5_000_000_000_000_000, "5,000.0 TB"),
    ],
)
def test_format_size(count, shown):
    assert format_size(count) == shown


@given(st.integers(1000, 10**18))
def test_a_size_is_within_a_twentieth_of_its_count(count):
    number, unit = format_size(count).split(" ")
    scale = {"kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}[unit]
    shown = float(number.replace(",", ""))
    assert abs(shown * scale - count) <= 0.05 * scale  # one decimal, rounded
    assert shown <= 1000 or unit == "TB"  # 999.96 kB shows as 1000.0 kB: rounded, not carried
