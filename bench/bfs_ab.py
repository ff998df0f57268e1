"""`order=bfs` crawls of the mirrored wikipedia (depth 2, through the site server on 127.0.0.1, no
delay), this checkout against another commit's code, 1 and 8 requests at a time, side by side in the
same rounds (crawl_bench's rounds and checks).  `.venv/bin/python -m bench.bfs_ab COMMIT`: one line a
contender, medians and the ratios of this checkout's time to the other's in the same rounds."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from bench.common import BIN, WORK, unpack_mirror
from bench.crawl_bench import WIKIPEDIA, same_directories, side_by_side
from bench.index_bench import tse_from, worktree


def run(commit: str) -> list[str]:
    other = worktree(WORK / f"bfs-{commit}", commit)
    fast = ["-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=WARNING", "--order", "bfs"]

    def contenders_of(proxy: str, out: Path, work: Path) -> dict[str, tuple[list[str], Path | None]]:
        found = {}
        for at_once in ("1", "8"):
            concurrency = ["-s", f"CONCURRENT_REQUESTS={at_once}"]
            mine, theirs = out / f"this-{at_once}", out / f"other-{at_once}"
            found[f"{commit} {at_once} at a time"] = (
                tse_from(other, "crawl", WIKIPEDIA, theirs, "2", *fast, *concurrency),
                theirs,
            )
            found[f"this checkout {at_once} at a time"] = (
                [str(BIN / "tse"), "crawl", WIKIPEDIA, str(mine), "2", *fast, *concurrency],
                mine,
            )
        return found

    def checked(out: Path) -> None:
        for at_once in ("1", "8"):  # the same pages, whatever their docIDs
            same_directories(out / f"this-{at_once}", out / f"other-{at_once}", same_ids=False)

    results = side_by_side(unpack_mirror(), contenders_of, checked)
    lines = []
    for at_once in ("1", "8"):
        mine, theirs = results[f"this checkout {at_once} at a time"], results[f"{commit} {at_once} at a time"]
        ratios = [m[0] / t[0] for m, t in zip(mine, theirs, strict=True)]
        lines.append(
            f"{at_once} at a time: {commit} {statistics.median(t[0] for t in theirs):.2f} s, this checkout"
            f" {statistics.median(m[0] for m in mine):.2f} s, {mine[0][2]} pages; this / {commit}: median"
            f" {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
        )
    return lines


if __name__ == "__main__":
    print("\n".join(run(sys.argv[1])))
