"""The search index's anchor text gathered again, this checkout's code against another commit's, side
by side in process on the 20,000-page bench's search index (a copy, each gathering rolled back): CPU
seconds and peak traced memory of each, and whether the anchors are the same.  For a change to
``fulltext/store.py``'s gathering (``_gather_anchors``, ``_index_anchors``), whose cost a whole build's
noise hides.  `.venv/bin/python -m bench.anchors_ab COMMIT [ROUNDS]`; the index is one bench.index_ab
or bench.start_ab wrote for this checkout (run one of them first)."""

from __future__ import annotations

import importlib.util
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from types import ModuleType

import apsw

from bench.common import ROOT, WORK, round_order
from tse_scrapy.fulltext import store


def store_of(commit: str) -> ModuleType:
    """*commit*'s ``tse_scrapy/fulltext/store.py``, imported as a module of its own (its imports this
    checkout's, which the gathering does not use)."""
    source = subprocess.run(
        ["git", "show", f"{commit}:tse_scrapy/fulltext/store.py"], cwd=ROOT, check=True, capture_output=True
    ).stdout.decode()
    path = WORK / f"store_{commit}.py"
    path.write_text(source.replace("from ..", "from tse_scrapy."))
    spec = importlib.util.spec_from_file_location(f"store_{commit}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def _gather(module: ModuleType, db: apsw.Connection) -> None:
    module._index_anchors(db, module._gather_anchors(db, None))


def run(commit: str, rounds: int) -> list[str]:
    written = (WORK / "index-ab" / "this.index.search", WORK / "start-this" / "large.index.search")
    source = next(path for path in written if path.is_file())
    copy = WORK / "anchors-ab.search"
    shutil.copyfile(source, copy)
    contenders = {commit: store_of(commit), "this checkout": store}
    db = apsw.Connection(str(copy))
    pages, characters = db.execute("SELECT count(*), sum(length(terms)) FROM anchors").fetchone()
    found: dict[str, list[tuple[float, int]]] = {name: [] for name in contenders}
    lines = [f"{pages:,} pages linked to, {characters:,} characters of anchor text"]
    for number in range(rounds):
        for name in round_order(contenders, number):
            db.execute("BEGIN")
            before = dict(db.execute("SELECT doc_id, terms FROM anchors"))
            db.execute("DELETE FROM anchors")
            db.execute("DELETE FROM anchors_fts")
            started = time.process_time()
            _gather(contenders[name], db)
            seconds = time.process_time() - started
            tracemalloc.start()
            db.execute("DELETE FROM anchors")
            db.execute("DELETE FROM anchors_fts")
            _gather(contenders[name], db)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            same = dict(db.execute("SELECT doc_id, terms FROM anchors")) == before
            db.execute("ROLLBACK")
            found[name].append((seconds, peak))
            lines.append(f"round {number + 1} {name}: {seconds:.2f} s CPU, peak {peak / 1e6:.1f} MB, same: {same}")
    for name, values in found.items():
        cpu = statistics.median(value[0] for value in values)
        peak = statistics.median(value[1] for value in values)
        lines.append(f"median {name}: {cpu:.2f} s CPU, peak {peak / 1e6:.1f} MB")
    db.close()
    copy.unlink()
    return lines


if __name__ == "__main__":
    for line in run(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3):
        print(line, flush=True)
