"""``tse import`` against warcio alone reading the same web archive.

The archive is written by wget (``-r -l 2 --warc-file``) crawling the mirrored wikipedia site
through the site server, once, into bench/work/import/.  In each round, in an order that
alternates: ``warcio alone`` (a child process iterating every record and reading every
response's payload with its codings undone: the floor of any reader), and ``tse import`` of the
archive into a new directory in memory (tmpfs), and the same with ``--record`` (which scans every
page's links; a plain import stops scanning once every page has its depth).  Megabytes of
archive a second, and each round's time against warcio's in the same round; medians.  Run by
bench/run.py, or alone: ``.venv/bin/python bench/import_bench.py`` (BENCH_REPEAT rounds, default 3, at least 5 here).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BIN, MEMORY_OUT, REPEAT, WORK, env_with_proxy, measure, site_server, unpack_mirror
from bench.crawl_bench import WIKIPEDIA, wget_command

ROUNDS = max(REPEAT, 5)
WARCIO_ALONE = r"""
import sys
from warcio.archiveiterator import ArchiveIterator
payload = 0
with open(sys.argv[1], "rb") as stream:
    for record in ArchiveIterator(stream):
        if record.rec_type == "response":
            payload += len(record.content_stream().read())
print(payload)
"""


def wget_archive(mirror: Path) -> Path:
    """The wget WARC of the mirror (made once)."""
    work = WORK / "import"
    warc = work / "wikipedia.warc.gz"
    if warc.is_file():
        return warc
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    with site_server(mirror) as proxy:
        subprocess.run(
            wget_command(proxy, work / "files", WIKIPEDIA, "--warc-file", str(warc)[: -len(".warc.gz")]),
            env=env_with_proxy(proxy),
            check=False,  # 8: some links answer 404
        )
    shutil.rmtree(work / "files", ignore_errors=True)
    return warc


def run(mirror: Path | None = None) -> list[str]:
    warc = wget_archive(mirror or unpack_mirror())
    size_mb = warc.stat().st_size / 1e6
    out = MEMORY_OUT / f"tse-import-bench-{os.getpid()}"
    times: dict[str, list[float]] = {"warcio alone": [], "`tse import`": [], "`tse import --record`": []}
    rss: dict[str, list[float]] = {name: [] for name in times}
    pages = 0
    try:
        for round_ in range(ROUNDS):
            contenders = [
                ("warcio alone", [sys.executable, "-c", WARCIO_ALONE, str(warc)]),
                ("`tse import`", [str(BIN / "tse"), "import", str(warc), str(out / str(round_))]),
                (
                    "`tse import --record`",
                    [str(BIN / "tse"), "import", "--record", str(out / "record"), str(warc), str(out / f"{round_}r")],
                ),
            ]
            if round_ % 2:
                contenders.reverse()
            (out / str(round_)).mkdir(parents=True)
            (out / f"{round_}r").mkdir()
            for name, command in contenders:
                wall, peak = measure(command)
                times[name].append(wall)
                rss[name].append(peak)
            pages = sum(1 for p in (out / str(round_)).iterdir() if p.name.isdigit())
            shutil.rmtree(out / str(round_))
            shutil.rmtree(out / f"{round_}r")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    base = times["warcio alone"]
    rows = [
        "## `tse import`: a web archive to a page directory, beside warcio alone",
        "",
        f"wget's WARC of the wikipedia mirror at depth 2: {size_mb:.1f} MB, {pages} HTML pages imported;"
        f" {ROUNDS} rounds, medians.",
        "",
        "| reader | wall s | MB of archive/s | peak RSS MB | vs warcio alone (per round: median, range) |",
        "|---|---|---|---|---|",
    ]
    for name, walls in times.items():
        ratios = [wall / floor for wall, floor in zip(walls, base, strict=True)]
        wall = statistics.median(walls)
        rows.append(
            f"| {name} | {wall:.2f} | {size_mb / wall:.0f} | {statistics.median(rss[name]):.0f} |"
            f" {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) |"
        )
    return [*rows, ""]


if __name__ == "__main__":
    print("\n".join(run()))
