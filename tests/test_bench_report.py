"""`make bench` merges its sections into bench/RESULTS.md: what it produces replaces the sections of
the same heading, and the sections it does not produce (the dated runs written for an issue) stay."""

from __future__ import annotations

import pytest

from bench.run import merged_report

OLD = """# Benchmark results

Produced on an earlier day.

## Fast crawl

old fast crawl

## 2026-12-02, issue 30: by hand

kept as written

## Indexing

old indexing
"""


@pytest.mark.parametrize(
    ("produced", "expected_sections"),
    [
        # A run that produces every generated section: both replaced in place, the hand-written one kept.
        (
            "## Fast crawl\n\nnew fast crawl\n\n## Indexing\n\nnew indexing\n",
            [
                "## Fast crawl\n\nnew fast crawl\n\n",
                "## 2026-12-02, issue 30: by hand\n\nkept as written\n\n",
                "## Indexing\n\nnew indexing\n",
            ],
        ),
        # A section no earlier run had goes at the end.
        (
            "## Fast crawl\n\nnew fast crawl\n\n## Render\n\nnew render\n",
            [
                "## Fast crawl\n\nnew fast crawl\n\n",
                "## 2026-12-02, issue 30: by hand\n\nkept as written\n\n",
                "## Indexing\n\nold indexing\n",
                "## Render\n\nnew render\n",
            ],
        ),
        # Nothing produced: every earlier section kept.
        (
            "",
            [
                "## Fast crawl\n\nold fast crawl\n\n",
                "## 2026-12-02, issue 30: by hand\n\nkept as written\n\n",
                "## Indexing\n\nold indexing\n",
            ],
        ),
    ],
    ids=["replaced-in-place", "new-section-last", "nothing-produced"],
)
def test_a_run_replaces_its_sections_and_keeps_the_others(produced, expected_sections):
    report = merged_report(OLD, "# Benchmark results\n\nProduced today.", produced)
    assert report == "# Benchmark results\n\nProduced today.\n\n" + "".join(expected_sections)


def test_the_first_run_writes_what_it_produced():
    assert merged_report("", "# H", "## A\n\na\n") == "# H\n\n## A\n\na\n"
