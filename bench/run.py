"""`make bench`: every benchmark, side by side with its baseline; writes bench/RESULTS.md.

Needs ../shared/tse-sites (the mirror of the reference sites), and Debian's
documentation packages for the known-item section (bench/install-docs.sh
installs them as root); nothing here is part of `make test`.  BENCH_REPEAT
(default 3) sets the number of rounds.  Most sections also run alone,
printing their section (`.venv/bin/python bench/known_item_bench.py`, say).
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import (
    crawl_bench,
    frontier_bench,
    import_bench,
    index_bench,
    known_item_bench,
    links_bench,
    pdf_bench,
    progress_bench,
    render_bench,
    scale_bench,
    search_bench,
    search_index_bench,
    update_bench,
)
from bench.common import ROOT, SHARED, compile_code, machine, unpack_mirror


def main() -> int:
    if not (SHARED / "mirror.tar.xz").is_file():
        print(f"bench: {SHARED}/mirror.tar.xz not found; the benchmarks need the reference mirror", file=sys.stderr)
        return 1
    mirror = unpack_mirror()
    compile_code(ROOT)
    # A child's peak RSS includes its parent's at fork time: the benchmarks
    # that load pages or an index in this process (in-link counts, query
    # timing) come after every measured child process.  search_bench holds no
    # index (its queries come from a child), so it runs before index_bench's
    # in-process query timing; its section is placed after the indexing ones.
    # known_item_bench keeps page texts in memory while it runs: it comes last.
    crawls = crawl_bench.run(mirror) + links_bench.run()
    search = search_bench.run(mirror)
    indexing = index_bench.run(mirror) + search_index_bench.run(mirror)
    scale = scale_bench.run()
    sections = (
        crawls
        + indexing
        + search
        + scale
        + frontier_bench.run(mirror)
        + update_bench.run(mirror)
        + progress_bench.run(mirror)
        + pdf_bench.run()
        + import_bench.run(mirror)
        + render_bench.run(mirror)
        + known_item_bench.run()
    )
    header = [
        "# Benchmark results",
        "",
        f"Sections produced by `make bench` (`bench/run.py`) on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC;"
        " the sections it does not produce are kept as they were written.",
        f"Machine: {machine()}.",
        "",
    ]
    results = ROOT / "bench" / "RESULTS.md"
    previous = results.read_text() if results.is_file() else ""
    report = merged_report(previous, "\n".join(header), "\n".join(sections))
    results.write_text(report)
    print(report)
    return 0


def _sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The text before the first ``## `` heading, and each level-2 section as (heading, text)."""
    head, found, current = [], [], None
    for line in text.splitlines(keepends=True):
        if line.startswith("## "):
            current = [line.rstrip("\n"), line]
            found.append(current)
        elif current is None:
            head.append(line)
        else:
            current[1] += line
    return "".join(head), [(heading, body) for heading, body in found]


def merged_report(previous: str, header: str, produced: str) -> str:
    """RESULTS.md after a run: *header*, then the sections of *previous* in their order, each
    replaced by the section of *produced* with the same heading, then the sections only *produced*
    has.  Sections written by hand (the dated runs of an issue) stay: a run adds, it never loses."""
    _, old = _sections(previous)
    _, new = _sections(produced)
    fresh: dict[str, str] = {}
    for heading, body in new:  # two produced sections of one heading stay together
        fresh[heading] = fresh.get(heading, "") + (body if body.endswith("\n") else body + "\n")
    merged = [fresh.pop(heading, body) for heading, body in old]
    merged += [fresh.pop(heading) for heading, _ in new if heading in fresh]
    pieces = [header.rstrip("\n") + "\n\n"] + [body if body.endswith("\n") else body + "\n" for body in merged]
    return "".join(pieces)


if __name__ == "__main__":
    sys.exit(main())
