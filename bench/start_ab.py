"""`tse serve`'s start on the 20,000-page bench, this checkout against another commit's code, started
in turn: seconds from starting it to its first `/api/search` answer (the search bench's query), each
serving the index its own `tse index` wrote.
`.venv/bin/python -m bench.start_ab COMMIT [STARTS]`; the other commit is checked out as a git worktree
under bench/work. Prints one line a start, then the medians."""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

from bench.common import BIN, WORK, round_order, unpack_mirror
from bench.index_bench import large_directory, page_directories, serve_start_up, tse_from, worktree


def indexes(commit: str, directory: Path) -> tuple[dict[str, list[str]], dict[str, Path]]:
    """The ``tse`` command of *commit* and of this checkout, and the index each serves, written anew
    by its own ``tse index`` (the pages may have changed since)."""
    other = worktree(WORK / f"latency-{commit}", commit)
    contenders = {commit: tse_from(other), "this checkout": [str(BIN / "tse")]}
    written = {}
    for name, tse in contenders.items():
        index = WORK / f"start-{commit if name == commit else 'this'}" / "large.index"
        index.parent.mkdir(parents=True, exist_ok=True)
        command = [*tse, "index", str(directory), str(index), "--jobs", "2"]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        written[name] = index
    return contenders, written


def run(commit: str, starts: int) -> list[str]:
    directory = large_directory(page_directories(unpack_mirror())["wikipedia-2"])
    contenders, written = indexes(commit, directory)
    found: dict[str, list[float]] = {name: [] for name in contenders}
    lines = []
    for number in range(starts):
        for name in round_order(contenders, number):
            _, answered = serve_start_up(directory, written[name], contenders[name])
            found[name].append(answered)
            lines.append(f"start {number + 1} {name}: first answer after {answered:.3f} s")
            print(lines[-1], flush=True)
    lines += [f"{name}: median {statistics.median(times):.3f} s" for name, times in found.items()]
    return lines


if __name__ == "__main__":
    print("\n".join(run(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 8)))
