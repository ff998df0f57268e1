"""`tse index --jobs 2` of the 20,000-page bench, this checkout against another commit's code, side by
side in the same rounds (the order alternating), each writing its own index: wall and CPU seconds (all
processes) and peak RSS, a line a round and the medians.  For a change's own cost, where
bench.search_index_bench compares with the indexer before the search index.
`.venv/bin/python -m bench.index_ab COMMIT [ROUNDS]`; the other commit is checked out as a git worktree
under bench/work, compiled as this checkout is."""

from __future__ import annotations

import statistics
import sys

from bench.common import BIN, WORK, round_order, unpack_mirror
from bench.index_bench import large_directory, measure_cpu, page_directories, tse_from, worktree


def run(commit: str, rounds: int) -> list[str]:
    directory = large_directory(page_directories(unpack_mirror())["wikipedia-2"])
    other = worktree(WORK / f"index-{commit}", commit)
    out = WORK / "index-ab"
    out.mkdir(exist_ok=True)
    contenders = {
        commit: tse_from(other, "index", directory, out / "other.index", "--jobs", "2"),
        "this checkout": [str(BIN / "tse"), "index", str(directory), str(out / "this.index"), "--jobs", "2"],
    }
    found: dict[str, list[tuple[float, float, float]]] = {name: [] for name in contenders}
    lines = []
    for number in range(rounds):
        for name in round_order(contenders, number):
            wall, peak, cpu = measure_cpu(contenders[name])
            found[name].append((wall, cpu, peak))
            lines.append(f"round {number + 1} {name}: {wall:.1f} s, CPU {cpu:.1f} s, peak {peak:.0f} MB")
            print(lines[-1], flush=True)
    medians = {name: [statistics.median(values) for values in zip(*runs, strict=True)] for name, runs in found.items()}
    for name, (wall, cpu, peak) in medians.items():
        lines.append(f"median {name}: {wall:.1f} s, CPU {cpu:.1f} s, peak {peak:.0f} MB")
    (wall, cpu, _), (base_wall, base_cpu, _) = medians["this checkout"], medians[commit]
    lines.append(f"this checkout against {commit}: wall {wall / base_wall:.2f}x, CPU {cpu / base_cpu:.2f}x")
    print(*lines[-3:], sep="\n")
    return lines


if __name__ == "__main__":
    run(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3)
