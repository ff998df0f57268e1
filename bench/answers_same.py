"""Whether `tse serve` answers the known-item bench's titles the same, byte for byte, from this
checkout's code and from another commit's (issue 27: a change to the search's speed must change no
result): each title as /api/search?q=TITLE&rank=relevance (the latency bench's request: the first page
of results), and with per_page=100, sent to a server keeping no answers (`--answer-cache 0`, one
worker), both servers serving the same index.
`.venv/bin/python -m bench.answers_same COMMIT`: prints how many answers differ (0 expected)."""

from __future__ import annotations

import hashlib
import sys

from bench.common import BIN, WORK
from bench.index_bench import tse_from, worktree
from bench.known_item_bench import ALL, KNOWN, api_path, build, index_path, sites
from bench.search_bench import Server, get
from bench.title_cpu import titles


def answers(tse: list[str], paths: list[str]) -> list[bytes]:
    server = Server(KNOWN / "pages" / ALL, index_path(ALL), 1, tse, ("--answer-cache", "0"))
    try:
        server.first_answer("/healthz")
        found = []
        for path in paths:
            status, body = get(server.port, path)
            found.append(b"%d " % status + body)
        return found
    finally:
        server.stop()


def main() -> None:
    build(sites())
    other = worktree(WORK / f"latency-{sys.argv[1]}", sys.argv[1])
    queries = titles()
    paths = [api_path(query, "relevance", per_page=None) for query in queries]
    paths += [api_path(query, "relevance", per_page=100) for query in queries]
    mine = answers([str(BIN / "tse")], paths)
    theirs = answers(tse_from(other), paths)
    differ = [path for path, one, two in zip(paths, mine, theirs, strict=True) if one != two]
    digest = hashlib.sha256(b"\n".join(mine)).hexdigest()[:16]
    print(f"{len(paths)} answers, {len(differ)} differ; this checkout's answers' digest {digest}")
    for path in differ[:10]:
        print("differs:", path)


if __name__ == "__main__":
    main()
