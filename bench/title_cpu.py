"""The CPU of a title asked for the first time, in process (issue 27): `rank=relevance`'s answer and its
first page of results (snippets, highlights) for the known-item bench's titles, as `tse serve`'s
/api/search makes them, each title once after the WARM_UP first (as bench.latency_ab's warm-up).

`.venv/bin/python -m bench.title_cpu time [RUNS]`: the CPU a title (median of RUNS passes, each in a
fresh engine), split into the answer and the results.
`.venv/bin/python -m bench.title_cpu dump FILE`: each title's API JSON, one a line, to compare two
checkouts' answers byte for byte (`cmp`).
`.venv/bin/python -m bench.title_cpu profile FILE`: cProfile of one pass to FILE."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import orjson

from bench.known_item_bench import ALL, KNOWN, WARM_UP, index_path, known_items
from tse_scrapy.index.engine import QueryEngine
from tse_scrapy.index.storage import IndexReader
from tse_scrapy.search.app import PER_PAGE, _results, _suggestion, result_content


def titles() -> list[str]:
    """The known-item titles of the all-sites index (kept beside it once read: reading them takes seconds)."""
    kept = KNOWN / "title-cpu-titles.json"
    if kept.is_file() and kept.stat().st_mtime >= (KNOWN / "pages" / ALL / "1").stat().st_mtime:
        return json.loads(kept.read_text())
    items, _, _ = known_items(KNOWN / "pages" / ALL, lambda _: ("", ""))
    found = [item.title for item in items]
    kept.write_text(json.dumps(found))
    return found


def engine() -> QueryEngine:
    found = QueryEngine(KNOWN / "pages" / ALL, IndexReader(index_path(ALL)))
    found.docs  # noqa: B018 (opened as a worker opens it)
    found.search_index  # noqa: B018
    return found


def content(engine: QueryEngine, line: str) -> bytes:
    """/api/search?q=LINE&rank=relevance's JSON (app.api_search's, without a language asked)."""
    answer = engine.answer(line, "relevance", limit_size=True)
    if answer is None or answer.error:
        return orjson.dumps({"error": answer.error if answer else None})
    results = _results(engine, answer, 1, PER_PAGE)
    found = {"query": line, "rank": "relevance", "total": len(answer.ranked), "page": 1, "per_page": PER_PAGE}
    found.update(lang=None, partial=answer.partial, missing=list(answer.missing), suggestion=_suggestion(answer))
    found["results"] = [result_content(result, "relevance") for result in results]
    return orjson.dumps(found)


def one_pass(queries: list[str]) -> tuple[float, float]:
    """The CPU (ms) a title of *queries* past the warm-up: the answer, the results."""
    searched = engine()
    for line in queries[:WARM_UP]:
        content(searched, line)
    answering = showing = 0.0
    # (LATA_MEASURED=N: only the first N titles past the warm-up, for callgrind's slower runs.)
    measured = queries[WARM_UP:][: int(os.environ.get("LATA_MEASURED", len(queries)))]
    for line in measured:
        began = time.process_time()
        answer = searched.answer(line, "relevance", limit_size=True)
        answered = time.process_time()
        if answer is not None and not answer.error:
            _results(searched, answer, 1, PER_PAGE)
        showing += time.process_time() - answered
        answering += answered - began
    searched.close()
    count = max(1, len(measured))
    return answering * 1000 / count, showing * 1000 / count


def main() -> None:
    what = sys.argv[1]
    queries = titles()
    if what == "time":
        runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
        found = [one_pass(queries) for _ in range(runs)]
        for answering, showing in found:
            print(f"answer {answering:.3f} ms, results {showing:.3f} ms, both {answering + showing:.3f} ms")
        print(
            f"median of {runs}: answer {statistics.median(a for a, _ in found):.3f} ms, results "
            f"{statistics.median(s for _, s in found):.3f} ms, both {statistics.median(a + s for a, s in found):.3f} "
            f"ms a title ({len(queries) - WARM_UP} titles)"
        )
    elif what == "dump":
        searched = engine()
        with Path(sys.argv[2]).open("wb") as out:
            for line in queries:
                out.write(content(searched, line) + b"\n")
        print(f"{len(queries)} answers")
    elif what == "profile":
        import cProfile

        cProfile.runctx("one_pass(queries)", globals(), {"queries": queries, "one_pass": one_pass}, sys.argv[2])


if __name__ == "__main__":
    main()
