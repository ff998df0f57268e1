"""Where a head holds text, not tags (rules/web/headtext.py): a table of heads and a property."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.web.headtext import TEXT_ELEMENTS, HiddenSpans


@pytest.mark.parametrize(
    ("head", "elements", "hidden_at", "shown_at"),
    [
        (b"<!-- <meta> --><meta>", TEXT_ELEMENTS, [5], [15]),
        (b"<script>'<link>'</script><link>", TEXT_ELEMENTS, [9], [25]),
        (b"<scripts><link>", TEXT_ELEMENTS, [], [9]),  # another element's name
        (b"<title><meta></title><meta>", TEXT_ELEMENTS, [7], [21]),
        (b"<noscript><meta></noscript>", TEXT_ELEMENTS, [10], []),
        (b"<noscript><meta></noscript>", ["script", "title"], [], [10]),
        (b"<!-- open to the end <meta>", TEXT_ELEMENTS, [21], []),
        (b"<style>x</style ><meta>", TEXT_ELEMENTS, [7], [17]),
        # Comments as HTML ends them: "<!-->" and "<!--->" empty, "--!>" closing one (a review's find).
        (b"<!--><meta>", TEXT_ELEMENTS, [2], [5]),
        (b"<!---><meta>", TEXT_ELEMENTS, [2], [6]),
        (b"<!-- x --!><meta>", TEXT_ELEMENTS, [5], [11]),
        (b"<!-- x --> y --!><meta>", TEXT_ELEMENTS, [5], [10, 17]),  # the first close ends it
        (b"<!-- x --!> y --><meta>", TEXT_ELEMENTS, [5], [11, 17]),
    ],
)
def test_hidden_spans(head, elements, hidden_at, shown_at):
    spans = HiddenSpans(head.lower(), elements)
    assert [spans.covers(at) for at in hidden_at] == [True] * len(hidden_at)
    assert [spans.covers(at) for at in shown_at] == [False] * len(shown_at)


def reference(lowered: bytes, position: int) -> bool:
    """Whether *position* is inside a comment or a text element, found by scanning from the start."""
    at = 0
    pattern = re.compile(rb"<!--|<(script|style|template|noscript|title)(?![a-z0-9])")
    while (found := pattern.search(lowered, at)) is not None:
        if found.group() == b"<!--":
            after = found.end()
            if lowered[after : after + 1] == b">":
                end = after + 1
            elif lowered[after : after + 2] == b"->":
                end = after + 2
            else:
                closes = [
                    lowered.find(close, after) + len(close) for close in (b"-->", b"--!>") if close in lowered[after:]
                ]
                end = min(closes, default=len(lowered))
        else:
            end = lowered.find(b"</" + found.group(1), found.end())
            close = lowered.find(b">", end) if end >= 0 else -1
            end = len(lowered) if end < 0 or close < 0 else close + 1
        if found.start() <= position < end:
            return True
        if found.start() > position:
            return False
        at = max(end, found.start() + 1)
    return False


@given(
    st.lists(
        st.sampled_from(
            [b"<!--", b"-->", b"--!>", b"-", b"<script>", b"</script>", b"<title>", b"</title>", b"x", b">"]
        )
    ),
    st.data(),
)
def test_spans_are_those_a_scan_from_the_start_finds(pieces, data):
    head = b"".join(pieces)
    positions = data.draw(st.lists(st.integers(min_value=0, max_value=len(head)), max_size=8))
    spans = HiddenSpans(head)
    for position in positions:  # in any order: the spans are found as far as asked
        assert spans.covers(position) == reference(head, position), (head, position)
