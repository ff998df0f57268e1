"""Two candidate full-text libraries for the search index (issue 27), on the same analyzed input.

Candidate 1 is SQLite FTS5, as ``tse index`` writes it (``fulltext/store.py``,
format 7: contentless_delete tables, written and read with apsw's SQLite, as
the system's cannot read them; queried by ``fulltext/searcher.py``); candidate
2 is tantivy (tantivy-py), fed the very same index terms
(``rules.text.pagefields``: already normalized, folded, stemmed and cut into
CJK bigrams; tantivy only splits them at the spaces).

1. **Build**: wall time, CPU time (every thread), peak RSS and size on disk,
   on the known-item all-sites directory and on wikipedia-copies-20000.  The
   pages are analyzed once (2 processes) into pickles under /tmp/candidates/,
   with what an indexing worker gives the writer (``store.packed``: the links
   compressed, the content digest, the snippet's head), so that only the
   engines' own indexing is timed, each in a fresh process.  FTS5 is built
   twice: whole (``SearchIndexWriter``, every side table) and its FTS5 tables
   alone (all five of them: fts, phrases_fts, titles_fts, anchors_fts,
   beyond_fts; tantivy is given no counterpart of phrases_fts and beyond_fts).
2. **Known-item MRR@100**: each page's title as the query, on the
   installation guide in every language, both engines given the same parsed
   query and the same forms (folded word and its stems in the index's
   languages); titles two pages share are left out.
3. **Latency**: 1,000 seeded random titles, one by one, in-process, after 50
   not counted, on all-sites and on the 20,000 pages.
4. **Update**: 5 pages removed and added back changed (FTS5:
   ``store.prepare_update`` then ``put_in_place``); are the scores of 20
   queries those of a fresh build of the same pages?

Smaller runs: ``CANDIDATES_SMALL=1`` leaves out the 20,000 pages,
``CANDIDATES_BUILD_RUNS=1`` builds each index once (default 2, the fastest kept).

Prints a markdown report and writes it to /tmp/candidates/report.md.
Alone: ``python -m bench.candidates_bench``.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import multiprocessing
import os
import pickle
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import apsw

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

try:
    import tantivy
except ImportError:  # candidate 2 is no dependency of tse: installed for this bench only
    raise SystemExit("bench.candidates_bench needs tantivy: .venv/bin/pip install tantivy==0.27.0") from None

from bench.common import ROOT, WORK, machine
from tse_scrapy.fulltext import searcher as fts5_searcher
from tse_scrapy.fulltext import store
from tse_scrapy.fulltext.matching import word_forms
from tse_scrapy.fulltext.searcher import SearchIndex
from tse_scrapy.index.docstore import TEXT_LIMIT
from tse_scrapy.rules.files import pagedir
from tse_scrapy.rules.queries.searchquery import Clause, SearchQuery, SearchQueryError, parse_search_query
from tse_scrapy.rules.text import analysis
from tse_scrapy.rules.text.pagefields import PageFields, page_fields, page_text

OUT = Path("/tmp/candidates")
CACHE = OUT / "cache"
INDEXES = OUT / "indexes"
KNOWN_PAGES = WORK / "known-item" / "pages"
ALL_SITES = KNOWN_PAGES / "all-sites"
BIG = WORK / "pages" / "wikipedia-copies-20000"
GUIDE = "installation-guide"
UPDATE_DIRECTORY = "installation-guide-en"

TOP = 100
SEED = 27
LATENCY_QUERIES = 1_000
WARM_UP = 50
UPDATED_PAGES = 5
UPDATE_QUERIES = 20
PROCESSES = 2

TANTIVY_HEAP = 200_000_000
TANTIVY_THREADS = 2
TERMS = "terms"  # the tantivy analyzer: split at whitespace, nothing else (the terms are analyzed already)
FIELDS = ("title", "headings", "url", "body")
WEIGHTS = {"title": 10.0, "headings": 3.0, "url": 3.0, "body": 1.0, "anchors": 1.0}
# The source the analyzed pages depend on (under tse_scrapy/): a cache made with other source is made
# again (the 20,000 pages excepted: minutes to make; the report says when their cache is of other source).
ANALYSIS_SOURCES = (
    "rules/text/*.py",  # analysis, pagefields, pagetext, encodings, words
    "rules/web/urls.py",  # the links' targets
    "rules/web/duplicates.py",  # the canonical URL, the content digest
    "rules/queries/searchsnippet.py",  # the snippet's head
    "fulltext/store.py",  # packed
)
# What a cache holds: made again, the 20,000 pages' too, when this changes.
CACHE_FORMAT = "2"

# docID, URL, title (as the document store keeps it), fields (with links and vocabulary), and the
# page as an indexing worker gives it to the writer (store.PackedPage: no links or vocabulary in its
# fields; the links compressed, the content digest, the snippet's head).
Doc = tuple[int, str, str, PageFields, store.PackedPage]


# ---------------------------------------------------------------- analysis, once


def analysis_digest() -> str:
    digest = hashlib.sha256(CACHE_FORMAT.encode())
    for pattern in ANALYSIS_SOURCES:
        paths = sorted((ROOT / "tse_scrapy").glob(pattern))
        if not paths:
            raise SystemExit(f"bench: no tse_scrapy/{pattern}: ANALYSIS_SOURCES names source that is gone")
        for path in paths:
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def read_text(directory: str | Path, doc_id: int) -> tuple[str, PageFields, str, str]:
    """A page as the indexer reads it (decoded once, ``page_text``): its URL, fields, title and the
    text the document store keeps (which ``store.packed`` makes the snippet's head of)."""
    page = pagedir.read_page(directory, doc_id)
    shown = page_text(page.body)
    return page.url, page_fields(page.url, page.body, None, shown), shown.title, shown.visible_text(TEXT_LIMIT)


def _analyze(task: tuple[str, int]) -> tuple[int, str, str, dict, bytes, str, bytes]:
    directory, doc_id = task
    url, fields, title, text = read_text(directory, doc_id)
    values = {field.name: getattr(fields, field.name) for field in dataclasses.fields(fields)}
    # What the indexing worker sends the writer (indexer.index_range), kept but for the fields.
    page = store.unpacked(store.packed(dataclasses.replace(fields, vocabulary=()), text))
    return doc_id, url, title, values, page.links, page.digest, page.head


def cache_paths(directory: Path, digest: str) -> tuple[Path, Path]:
    """The pickle of a directory's analyzed pages, and the small one of its titles and languages."""
    stem = f"{directory.name}-v{CACHE_FORMAT}" if directory == BIG else f"{directory.name}-{digest}"
    return CACHE / f"{stem}.pickle", CACHE / f"{stem}.meta.pickle"


def analyze_all(directories: list[Path], digest: str) -> dict[str, dict]:
    """Each directory analyzed into its cache when it is not there; what each cache holds."""
    CACHE.mkdir(parents=True, exist_ok=True)
    infos = {}
    missing = [directory for directory in directories if not cache_paths(directory, digest)[1].is_file()]
    if missing:
        with multiprocessing.get_context("fork").Pool(PROCESSES) as pool:
            for directory in missing:
                began = time.perf_counter()
                count = pagedir.check_page_files(directory)
                tasks = [(str(directory), doc_id) for doc_id in range(1, count + 1)]
                docs = list(pool.imap(_analyze, tasks, chunksize=16))
                seconds = time.perf_counter() - began
                write_cache(directory, docs, seconds, digest)
                print(f"analyzed {directory.name}: {count} pages in {seconds:.1f} s", file=sys.stderr, flush=True)
    for directory in directories:
        with open(cache_paths(directory, digest)[1], "rb") as meta:
            infos[directory.name] = pickle.load(meta)
    return infos


def write_cache(directory: Path, docs: list[tuple], seconds: float, digest: str) -> None:
    data, meta = cache_paths(directory, digest)
    for path, value in (
        (data, docs),
        (
            meta,
            {
                "pages": len(docs),
                "languages": sorted({doc[3]["language"] for doc in docs if doc[3]["language"]}),
                "titles": [(doc[0], doc[2]) for doc in docs],
                "terms_mb": sum(len(doc[3][name]) for doc in docs for name in ("title", "headings", "url", "body"))
                / 1e6,
                "seconds": seconds,
                "digest": digest,
            },
        ),
    ):
        partial = path.with_suffix(".partial")
        with open(partial, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
        partial.rename(path)


def load_docs(path: Path) -> list[Doc]:
    docs = []
    with open(path, "rb") as data:
        for doc_id, url, title, values, links, digest, head in pickle.load(data):
            fields = PageFields(**values)
            page = store.PackedPage(dataclasses.replace(fields, links=(), vocabulary=()), links, digest, head)
            docs.append((doc_id, url, title, fields, page))
    return docs


# ---------------------------------------------------------------- building


def build_fts5(path: Path, docs: Sequence[Doc]) -> None:
    """The search index as ``tse index`` writes it (``indexer.write_index_files``): each page's
    PackedPage added, the pages' vocabulary (the first spelling of a word, in docID order, as the
    indexer's ranges give it), then ``finish``: anchors gathered, duplicates grouped, segments merged,
    terms counted, meta written, the file renamed into place."""
    with store.SearchIndexWriter(path) as writer:
        spellings: store.Spellings = {}
        for doc_id, url, _, fields, page in docs:
            writer.add(doc_id, url, page)
            for word, spelling in fields.vocabulary:
                spellings.setdefault(word, (spelling, doc_id))
        writer.add_vocabulary(spellings)
        writer.finish(0, b"")


def gather_anchors(docs: Sequence[Doc]) -> dict[int, str]:
    """store.gather_anchors over pages in memory: each page's anchor terms, as FTS5's are gathered."""
    pages_at: dict[str, list[int]] = {}
    for doc_id, url, *_ in docs:
        pages_at.setdefault(url, []).append(doc_id)
    return store.gather_anchors(pages_at, ((doc[0], list(doc[3].links)) for doc in docs))


def tantivy_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("doc_id", stored=True, indexed=True, fast=True)
    builder.add_text_field("lang", tokenizer_name="raw")
    for name in (*FIELDS, "anchors"):
        builder.add_text_field(name, tokenizer_name=TERMS, index_option="position")
    return builder.build()


def _register(index: tantivy.Index) -> tantivy.Index:
    # Not kept in the index: every opening registers it again (a writer refuses to add documents without it).
    index.register_tokenizer(TERMS, tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
    return index


def open_tantivy(path: Path) -> tantivy.Index:
    return _register(tantivy.Index.open(str(path)))


def tantivy_document(doc_id: int, fields: PageFields, anchors: str) -> tantivy.Document:
    document = tantivy.Document()
    document.add_unsigned("doc_id", doc_id)
    document.add_text("lang", fields.language)
    for name in FIELDS:
        value = getattr(fields, name)
        if value:
            document.add_text(name, value)
    if anchors:
        document.add_text("anchors", anchors)
    return document


def build_tantivy(path: Path, docs: Sequence[Doc]) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    index = _register(tantivy.Index(tantivy_schema(), str(path), reuse=False))
    writer = index.writer(TANTIVY_HEAP, TANTIVY_THREADS)
    anchors = gather_anchors(docs)
    for doc_id, _, _, fields, _ in docs:
        writer.add_document(tantivy_document(doc_id, fields, anchors.get(doc_id, "")))
    writer.commit()
    writer.wait_merging_threads()


def build_fts5_only(path: Path, docs: Sequence[Doc]) -> None:
    """Only what the engine needs, for tantivy's like: store.py's FTS5 tables, written as the writer
    writes them (journal off, merges left to the end, then each table's segments merged into one),
    the anchors gathered in Python (no pages, links, vocabulary, heads, duplicates or term counts,
    which an update, corrections, snippets and grouping need)."""
    path.unlink(missing_ok=True)
    db = store.connect(path, writable=True)  # apsw's SQLite: contentless_delete needs 3.43
    try:
        store._fast_writes(db)
        # The FTS5 tables of store.py's schema, whatever they are now (fts, phrases_fts, ...).
        virtual = [line for line in store._SCHEMA.splitlines() if line.startswith("CREATE VIRTUAL TABLE")]
        db.execute("\n".join(virtual))
        store._merges_left_to_the_end(db)
        page_tables: dict[str, tuple[str, list[str]]] = {}  # table: its INSERT, the attributes inserted
        for line in virtual:
            table_name = line.split()[3]
            columns = [part.strip() for part in line[line.index("(") + 1 : line.rindex(")")].split(",")]
            columns = [column for column in columns if "=" not in column]
            if table_name == "anchors_fts":
                continue
            known = FTS5_COLUMNS.get(table_name)
            if known is None or list(known) != columns:
                raise SystemExit(f"bench: store.py has an FTS5 table this bench does not know: {line}")
            marks = ", ".join("?" for _ in columns)
            insert = f"INSERT INTO {table_name}(rowid, {', '.join(columns)}) VALUES (?, {marks})"
            page_tables[table_name] = (insert, list(known.values()))
        db.execute("BEGIN")
        for doc_id, _, _, fields, _ in docs:
            for table_name, (insert, attributes) in page_tables.items():
                values = [getattr(fields, attribute) for attribute in attributes]
                if table_name in FTS5_IF_ANY and not any(values):
                    continue
                db.execute(insert, (doc_id, *values))
        for doc_id, terms in gather_anchors(docs).items():
            db.execute("INSERT INTO anchors_fts(rowid, anchors) VALUES (?, ?)", (doc_id, terms))
        store._merge_segments(db)
        db.execute("COMMIT")
    finally:
        db.close()


# store.py's FTS5 tables but anchors_fts: each column -> the PageFields attribute inserted in it (as
# store._insert_page inserts them); rows of FTS5_IF_ANY only for pages with something to put in them.
FTS5_COLUMNS = {
    "fts": {name: name for name in FIELDS},
    "phrases_fts": {"title": "title_words", "body": "body_words"},
    "titles_fts": {"title": "title"},
    "beyond_fts": {"terms": "beyond", "words": "beyond_words"},
}
FTS5_IF_ANY = {"beyond_fts"}
# The engines searched; and what is built (and timed) on the big directories.
BUILDERS: dict[str, Callable[[Path, Sequence[Doc]], None]] = {"fts5": build_fts5, "tantivy": build_tantivy}
BUILDS = {"fts5": build_fts5, "fts5 (FTS tables only)": build_fts5_only, "tantivy": build_tantivy}
BUILD_RUNS = int(os.environ.get("CANDIDATES_BUILD_RUNS", "2"))  # the fastest of these many is reported


def index_path(engine: str, name: str) -> Path:
    """Where an engine's index of a directory goes (FTS5's as store.search_path names it)."""
    if engine == "fts5":
        return INDEXES / f"{name}.index.search"
    if engine == "tantivy":
        return INDEXES / f"{name}.tantivy"
    return INDEXES / f"{name}.fts-only.sqlite"


def disk_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(child.stat().st_size for child in path.rglob("*") if child.is_file())


def _status(key: str) -> int:
    """A line of /proc/self/status, in kB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def build_worker(engine: str, cache: str, out: str) -> None:
    """One build, alone in this process: the pages loaded first, then only the engine timed."""
    docs = load_docs(Path(cache))
    gc.collect()
    gc.freeze()
    rss_before = _status("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets the peak (VmHWM) to the current RSS
        reset = True
    except OSError:
        reset = False
    usage_before = resource.getrusage(resource.RUSAGE_SELF)
    began = time.perf_counter()
    BUILDS[engine](Path(out), docs)
    wall = time.perf_counter() - began
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak = _status("VmHWM") if reset else usage.ru_maxrss
    print(
        json.dumps(
            {
                "wall": wall,
                "user": usage.ru_utime - usage_before.ru_utime,
                "system": usage.ru_stime - usage_before.ru_stime,
                "rss_delta_mb": (peak - rss_before) / 1024,
                "peak_reset": reset,
                "pages": len(docs),
            }
        )
    )


def measured_build(engine: str, directory: Path, digest: str) -> dict:
    cache = cache_paths(directory, digest)[0]
    out = index_path(engine, directory.name)
    command = [sys.executable, "-m", "bench.candidates_bench", "--build-worker", engine, str(cache), str(out)]
    runs = []
    for _ in range(BUILD_RUNS):
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        if done.returncode:
            raise SystemExit(f"bench: build failed: {' '.join(command)}\n{done.stderr}")
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    result = min(runs, key=lambda run: run["wall"])
    result["walls"] = [run["wall"] for run in runs]
    result["size_mb"] = disk_size(out) / 1e6
    result["detail"] = tantivy_sizes(out) if engine == "tantivy" else fts5_sizes(out)
    return result


def fts5_sizes(path: Path) -> str:
    """Each FTS5 table's share of the file (its shadow tables), and the rest's (pages, links,
    vocabulary, anchors, same, groups, heads, term_counts, meta and their indexes)."""
    db = store.connect(path)  # apsw's SQLite, read-only (dbstat is compiled in)
    try:
        sizes = dict(db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"))
    finally:
        db.close()
    by_table: Counter = Counter()
    for name, size in sizes.items():
        for table in store.FTS_TABLES:
            if name.startswith(table + "_"):  # fts_data, titles_fts_idx ...
                by_table[table] += size
                break
    fts = sum(by_table.values())
    rest = sum(sizes.values()) - fts
    tables = ", ".join(f"{table} {by_table[table] / 1e6:.1f}" for table in store.FTS_TABLES)
    return f"FTS5 tables {fts / 1e6:.1f} MB ({tables}), side tables {rest / 1e6:.1f} MB"


def tantivy_sizes(path: Path) -> str:
    by_kind: Counter = Counter()
    for child in path.iterdir():
        if child.is_file() and not child.name.startswith("."):
            by_kind[child.suffix.lstrip(".") or child.name] += child.stat().st_size
    segments = open_tantivy(path).searcher().num_segments
    parts = ", ".join(f"{kind} {size / 1e6:.1f}" for kind, size in by_kind.most_common(6))
    return f"{segments} segment(s); MB by file kind: {parts}"


# ---------------------------------------------------------------- searching


class Fts5Search:
    """The project's own searcher over a file SearchIndexWriter wrote."""

    name = "fts5"

    def __init__(self, path: Path):
        self.index = SearchIndex(store.connect(path))  # as SearchIndex.open reads it (apsw, read-only)

    def search(self, query: SearchQuery) -> list[tuple[int, float]]:
        return self.index.search(query).ranked[:TOP]

    def close(self) -> None:
        self.index.close()


class TantivySearch:
    """The FTS5 searcher's query in tantivy: every clause required (any of them when no page has all),
    a clause's score the sum over the fields of its weight times the best of its forms' scores; the
    anchor text adds to a page's score but does not make a page an answer (as with FTS5)."""

    name = "tantivy"

    def __init__(self, path: Path, languages: list[str]):
        self.index = open_tantivy(path)
        self.schema = self.index.schema
        self.searcher = self.index.searcher()
        self.languages = languages

    def search(self, query: SearchQuery) -> list[tuple[int, float]]:
        groups = [self._alternatives(alternatives) for alternatives in query.required]
        excluded = [(tantivy.Occur.MustNot, self._fields(clause, FIELDS)) for clause in query.excluded]
        hits = self._hits(groups, tantivy.Occur.Must, excluded)
        if not hits and len(groups) > 1:
            hits = self._hits(groups, tantivy.Occur.Should, excluded)
        doc_ids = self.searcher.fast_field_values("doc_id", [address for _, address in hits])
        return sorted(zip(doc_ids, (score for score, _ in hits), strict=True), key=lambda pair: (-pair[1], pair[0]))

    def _hits(self, groups: list, occur: tantivy.Occur, excluded: list) -> list:
        query = tantivy.Query.boolean_query([(occur, group) for group in groups] + excluded)
        return self.searcher.search(query, TOP, count=False).hits

    def _alternatives(self, alternatives: tuple[Clause, ...]) -> tantivy.Query:
        queries = [self._clause(clause) for clause in alternatives]
        if len(queries) == 1:
            return queries[0]
        return tantivy.Query.boolean_query([(tantivy.Occur.Should, query) for query in queries])

    def _clause(self, clause: Clause) -> tantivy.Query:
        must = (tantivy.Occur.Must, self._fields(clause, FIELDS))
        return tantivy.Query.boolean_query([must, (tantivy.Occur.Should, self._fields(clause, ("anchors",)))])

    def _fields(self, clause: Clause, names: Sequence[str]) -> tantivy.Query:
        per_field = [(tantivy.Occur.Should, _boosted(self._in_field(clause, name), WEIGHTS[name])) for name in names]
        return per_field[0][1] if len(per_field) == 1 else tantivy.Query.boolean_query(per_field)

    def _in_field(self, clause: Clause, name: str) -> tantivy.Query:
        if clause.is_phrase:
            variants = dict.fromkeys(
                tuple(analysis.stem(list(clause.words), language)) for language in [None, *self.languages]
            )
            return _best([self._phrase(name, list(variant)) for variant in variants])
        (word,) = clause.words
        if analysis.is_segmented(word):
            if len(word) == 1:  # FTS5: "X"*, the bigrams it starts
                return tantivy.Query.regex_query(self.schema, name, re.escape(word) + ".*")
            return self._term(name, word)
        return _best([self._term(name, form) for form in word_forms(word, self.languages)])

    def _term(self, name: str, term: str) -> tantivy.Query:
        return tantivy.Query.term_query(self.schema, name, term, index_option="freq")

    def _phrase(self, name: str, terms: list[str]) -> tantivy.Query:
        # phrase_query panics (pyo3_runtime.PanicException, not an Exception) on a single term.
        if len(terms) == 1:
            return self._term(name, terms[0])
        return tantivy.Query.phrase_query(self.schema, name, terms)

    def close(self) -> None:
        pass


def _best(queries: list[tantivy.Query]) -> tantivy.Query:
    return queries[0] if len(queries) == 1 else tantivy.Query.disjunction_max_query(queries)


def _boosted(query: tantivy.Query, weight: float) -> tantivy.Query:
    return query if weight == 1.0 else tantivy.Query.boost_query(query, weight)


def fts5_ranking() -> str:
    """The FTS5 searcher's ranking constants, as the code has them now."""
    names = ("WEIGHTS", "TEXT_FIELDS", "TITLE_WEIGHT", "ANCHOR_WEIGHT", "PHRASE_BONUS")
    return ", ".join(f"{name} {getattr(fts5_searcher, name)}" for name in names if hasattr(fts5_searcher, name))


def searcher(engine: str, name: str, languages: list[str]) -> Fts5Search | TantivySearch:
    path = index_path(engine, name)
    return Fts5Search(path) if engine == "fts5" else TantivySearch(path, languages)


# ---------------------------------------------------------------- known-item MRR


def known_items(docs_titles: list[tuple[int, str]]) -> list[tuple[int, str, SearchQuery]]:
    """(docID, title, query) of the pages whose title no other page has (ignoring case)."""
    shared = Counter(title.casefold() for _, title in docs_titles if title)
    found = []
    for doc_id, title in docs_titles:
        if not title or shared[title.casefold()] > 1:
            continue
        try:
            found.append((doc_id, title, parse_search_query(title)))
        except SearchQueryError:
            continue
    return found


def reciprocal_rank(ranked: list[tuple[int, float]], doc_id: int) -> float:
    for rank, (found, _) in enumerate(ranked[:TOP], 1):
        if found == doc_id:
            return 1 / rank
    return 0.0


def mrr_part(guides: list[Path], digest: str, infos: dict[str, dict]) -> tuple[list[dict], int]:
    rows = []
    anchor_mismatches = 0
    for directory in guides:
        docs = load_docs(cache_paths(directory, digest)[0])
        languages = infos[directory.name]["languages"]
        for engine, build in BUILDERS.items():
            build(index_path(engine, directory.name), docs)
        # The anchors tantivy was given are those FTS5 gathered.
        db = store.connect(index_path("fts5", directory.name))
        try:
            if dict(db.execute("SELECT doc_id, terms FROM anchors")) != gather_anchors(docs):
                anchor_mismatches += 1
        finally:
            db.close()
        titles = [(doc[0], doc[2]) for doc in docs]
        rows.append(known_item_row(directory.name, len(docs), titles, languages))
    return rows, anchor_mismatches


def known_item_row(name: str, pages: int, titles: list[tuple[int, str]], languages: list[str]) -> dict:
    """MRR@100, the share found first, and the titles not found in the top 100, by engine, on the
    indexes of directory *name* (built already)."""
    items = known_items(titles)
    row = {"name": name, "pages": pages, "titles": len(items), "languages": languages}
    for engine in BUILDERS:
        engine_searcher = searcher(engine, name, languages)
        ranks = [reciprocal_rank(engine_searcher.search(query), doc_id) for doc_id, _, query in items]
        engine_searcher.close()
        row[engine] = statistics.fmean(ranks) if ranks else 0.0
        row[f"{engine}@1"] = sum(rank == 1.0 for rank in ranks) / len(ranks) if ranks else 0.0
        row[f"{engine}-missed"] = sum(rank == 0.0 for rank in ranks)
    print(f"MRR {name}: fts5 {row['fts5']:.3f} tantivy {row['tantivy']:.3f}", file=sys.stderr, flush=True)
    return row


# ---------------------------------------------------------------- latency


def latency_part(name: str, info: dict) -> dict:
    titles = [title for _, title in info["titles"] if title]
    rng = random.Random(SEED)
    queries = []
    while len(queries) < WARM_UP + LATENCY_QUERIES:
        try:
            queries.append(parse_search_query(rng.choice(titles)))
        except SearchQueryError:
            continue
    # The engines take turns, query by query (each first every other time): on a shared machine
    # both meet the same load.
    searchers = {engine: searcher(engine, name, info["languages"]) for engine in BUILDERS}
    times: dict[str, list[float]] = {engine: [] for engine in BUILDERS}
    answered: Counter = Counter()
    for number, query in enumerate(queries):
        order = list(BUILDERS) if number % 2 == 0 else list(reversed(BUILDERS))
        for engine in order:
            began = time.perf_counter()
            ranked = searchers[engine].search(query)
            seconds = time.perf_counter() - began
            if number >= WARM_UP:
                times[engine].append(seconds * 1000)
                answered[engine] += bool(ranked)
    result = {}
    for engine, engine_searcher in searchers.items():
        engine_searcher.close()
        found = sorted(times[engine])
        result[engine] = {
            "median": statistics.median(found),
            "p99": found[int(len(found) * 0.99) - 1],
            "mean": statistics.fmean(found),
            "max": found[-1],
            "answered": answered[engine],
        }
        print(f"latency {name} {engine}: {result[engine]}", file=sys.stderr, flush=True)
    return result


# ---------------------------------------------------------------- update


def compare(updated: list[tuple[int, float]], fresh: list[tuple[int, float]]) -> tuple[bool, bool, float]:
    """Same pages in the same order; same scores exactly; the largest relative score difference."""
    same_order = [doc_id for doc_id, _ in updated] == [doc_id for doc_id, _ in fresh]
    fresh_scores = dict(fresh)
    differences = [
        abs(score - fresh_scores[doc_id]) / max(abs(fresh_scores[doc_id]), 1e-12)
        for doc_id, score in updated
        if doc_id in fresh_scores
    ]
    return same_order, updated == fresh, max(differences, default=0.0)


def update_part(directory: Path, digest: str, languages: list[str]) -> dict:
    docs = load_docs(cache_paths(directory, digest)[0])
    items = known_items([(doc[0], doc[2]) for doc in docs])
    rng = random.Random(SEED)
    changed_ids = sorted(rng.sample([doc_id for doc_id, _, _ in items], UPDATED_PAGES))
    # The changed pages as tse index --update gives them to store.prepare_update (update.py: URL and
    # store.packed of the fields, vocabulary included, compressed), their text read again.
    changed: dict[int, tuple[str, bytes]] = {}
    final_docs: list[Doc] = []
    appended = {}
    for doc_id, url, title, fields, page in docs:
        final, final_page = fields, page
        if doc_id in changed_ids:
            word = (fields.title.split() or ["debian"])[0]  # a word its own title query looks for
            appended[doc_id] = word
            final = dataclasses.replace(fields, body=f"{fields.body} {word}")
            text = read_text(directory, doc_id)[3]
            changed[doc_id] = (url, store.packed(final, text, compressed=True))
            final_page = dataclasses.replace(page.fields, body=final.body)
            final_page = store.PackedPage(final_page, page.links, page.digest, page.head)
        final_docs.append((doc_id, url, title, final, final_page))
    others = [item for item in items if item[0] not in changed_ids]
    queries = [item for item in items if item[0] in changed_ids] + rng.sample(others, UPDATE_QUERIES - len(changed_ids))
    where = INDEXES / "update"
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    result: dict = {"directory": directory.name, "changed": changed_ids, "appended": appended}

    # FTS5: the project's own update (a copy of the file, each changed page's rows deleted by its docID
    # from the contentless_delete tables and inserted anew, anchors, groups, merges and counts redone,
    # renamed into place), then a fresh build.
    build_fts5(where / "updated.index.search", docs)
    began = time.perf_counter()
    prepared = store.prepare_update(where / "updated.index", (0, b""), (0, b""), changed_ids, changed)
    if isinstance(prepared, str):
        raise SystemExit(f"bench: FTS5 update refused: {prepared}")
    prepared.put_in_place()
    result["fts5_update_seconds"] = time.perf_counter() - began
    build_fts5(where / "fresh.index.search", final_docs)
    updated, fresh = Fts5Search(where / "updated.index.search"), Fts5Search(where / "fresh.index.search")
    result["fts5"] = [compare(updated.search(query), fresh.search(query)) for _, _, query in queries]
    updated.close()
    fresh.close()

    # tantivy: delete by the doc_id term, add, commit; then a fresh build.
    build_tantivy(where / "updated.tantivy", docs)
    anchors = gather_anchors(final_docs)
    index = open_tantivy(where / "updated.tantivy")
    writer = index.writer(TANTIVY_HEAP, TANTIVY_THREADS)
    for doc_id in changed_ids:
        writer.delete_documents_by_term("doc_id", doc_id)
    writer.commit()
    index.reload()
    result["tantivy_docs_after_delete_by_term"] = index.searcher().num_docs
    began = time.perf_counter()
    for doc_id in changed_ids:
        writer.delete_documents_by_query(tantivy.Query.term_query(index.schema, "doc_id", doc_id))
    for doc_id, _, _, fields, _ in final_docs:
        if doc_id in changed:
            writer.add_document(tantivy_document(doc_id, fields, anchors.get(doc_id, "")))
    writer.commit()
    writer.wait_merging_threads()
    result["tantivy_update_seconds"] = time.perf_counter() - began
    index.reload()
    build_tantivy(where / "fresh.tantivy", final_docs)
    updated_t = TantivySearch(where / "updated.tantivy", languages)
    fresh_t = TantivySearch(where / "fresh.tantivy", languages)
    result["tantivy"] = [compare(updated_t.search(query), fresh_t.search(query)) for _, _, query in queries]
    # The baseline: two fresh builds (2 threads: pages fall in either segment) against each other.
    build_tantivy(where / "fresh-again.tantivy", final_docs)
    again = TantivySearch(where / "fresh-again.tantivy", languages)
    result["tantivy_fresh_twice"] = [compare(again.search(query), fresh_t.search(query)) for _, _, query in queries]
    searchers = {"updated": updated_t.searcher, "fresh": fresh_t.searcher}
    result["tantivy_state"] = {
        label: {
            "num_docs": found.num_docs,
            "segments": found.num_segments,
            "doc_freq": sum(found.doc_freq("body", word) for word in set(appended.values())),
        }
        for label, found in searchers.items()
    }
    result["pages"] = len(docs)
    return result


# ---------------------------------------------------------------- report


def table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def report(results: dict) -> str:
    parts = [
        "# Search index candidates: SQLite FTS5 vs tantivy (issue 27)",
        "",
        f"Machine: {results['machine']}; load average at start {results['load']}. "
        f"SQLite {apsw.sqlite_lib_version()} (apsw's, writing and reading: store.connect); "
        f"tantivy-py {results['tantivy_version']}. "
        f"Run: {results['run_seconds']:.0f} s. Both engines get the same analyzed pages "
        f"(rules.text.pagefields, analysis digest {results['digest']}) from pickles under {CACHE}; "
        f"tse_scrapy/fulltext digest {results['fulltext_digest']}.",
        "",
    ]
    if results.get("notes_cache"):
        parts += [results["notes_cache"], ""]
    parts += ["## Analysis (once, not timed below)", ""]
    parts.append(
        table(
            ["directory", "pages", "languages", "analyzed terms (MB)", "analysis (s, 2 processes)"],
            [
                [name, info["pages"], len(info["languages"]), f"{info['terms_mb']:.1f}", f"{info['seconds']:.1f}"]
                for name, info in results["infos"].items()
                if not name.startswith(GUIDE)
            ],
        )
    )
    parts += ["", "## 1. Build", ""]
    parts.append(
        "Each build alone in a fresh process, the analyzed pages loaded before it (for FTS5 the `PackedPage` "
        "an indexing worker sends the writer: links compressed, content digest, snippet head, made untimed). "
        "fts5: `SearchIndexWriter` add + add_vocabulary + finish (format 7: one transaction, journal off, "
        "synchronous off; the FTS5 tables fts, phrases_fts, titles_fts, anchors_fts, beyond_fts and the side "
        "tables pages/links/vocabulary/anchors/same/groups/heads/term_counts; anchors gathered, duplicates "
        "grouped, each FTS5 table's segments merged into one, terms counted). fts5 (FTS tables only): the "
        "five FTS5 tables alone, written and merged as the writer does, anchors gathered in Python (tantivy "
        "gets no counterpart of phrases_fts, the title's and body's words again unstemmed, nor of beyond_fts). "
        "tantivy: anchors gathered in Python, "
        f"`add_document` each page, `commit` (fsyncs), `wait_merging_threads`; {TANTIVY_THREADS} threads, "
        f"{TANTIVY_HEAP // 1_000_000} MB heap. CPU = user + system of every thread (getrusage RUSAGE_SELF); "
        "peak RSS delta = VmHWM (reset before the build) - VmRSS before."
    )
    parts.append("")
    rows = []
    for name, by_engine in results["builds"].items():
        for engine, found in by_engine.items():
            rows.append(
                [
                    name,
                    engine,
                    found["pages"],
                    f"{found['wall']:.2f}",
                    f"{found['user'] + found['system']:.2f}",
                    f"{found['rss_delta_mb']:.0f}",
                    f"{found['size_mb']:.1f}",
                    found["detail"],
                ]
            )
    parts.append(table(["pages", "engine", "docs", "wall s", "CPU s", "peak RSS Δ MB", "size MB", "detail"], rows))
    parts += ["", "## 2. Known-item MRR@100 (title as typed), installation guide", ""]
    mrr = results["mrr"]
    rows = [
        [
            row["name"].removeprefix(GUIDE + "-"),
            row["pages"],
            row["titles"],
            f"{row['fts5']:.3f}",
            f"{row['tantivy']:.3f}",
            f"{row['fts5@1']:.2f}",
            f"{row['tantivy@1']:.2f}",
            row["fts5-missed"],
            row["tantivy-missed"],
        ]
        for row in mrr
    ]
    for label, pick in (("mean", statistics.fmean), ("worst", min)):
        rows.append(
            [
                f"**{label}**",
                "",
                "",
                f"**{pick(r['fts5'] for r in mrr):.3f}**",
                f"**{pick(r['tantivy'] for r in mrr):.3f}**",
                f"{pick(r['fts5@1'] for r in mrr):.2f}",
                f"{pick(r['tantivy@1'] for r in mrr):.2f}",
                "",
                "",
            ]
        )
    whole = results["mrr_all"]
    rows.append(
        [
            f"all-sites ({len(whole['languages'])} languages, every manual)",
            whole["pages"],
            whole["titles"],
            f"{whole['fts5']:.3f}",
            f"{whole['tantivy']:.3f}",
            f"{whole['fts5@1']:.2f}",
            f"{whole['tantivy@1']:.2f}",
            whole["fts5-missed"],
            whole["tantivy-missed"],
        ]
    )
    parts.append(
        table(
            [
                "lang",
                "pages",
                "titles",
                "FTS5 MRR",
                "tantivy MRR",
                "FTS5 @1",
                "tantivy @1",
                "FTS5 missed",
                "tantivy missed",
            ],
            rows,
        )
    )
    parts.append("")
    parts.append(
        f"Anchor sets given to tantivy equal to FTS5's `anchors` table in {len(mrr) - results['anchor_mismatches']} "
        f"of {len(mrr)} directories. FTS5 = the project's `SearchIndex.search` as it is now ({fts5_ranking()}; "
        "typo corrections; quoted phrases matched as typed); tantivy = per-field BM25 (each field its own "
        f"length and document frequencies), weights {WEIGHTS}, a clause's forms: the best (dismax), no phrase "
        "bonus, no corrections, quoted phrases matched stemmed."
    )
    parts += ["", f"## 3. Latency ({LATENCY_QUERIES:,} random titles, one by one, in-process, after {WARM_UP})", ""]
    rows = []
    for name, by_engine in results["latency"].items():
        for engine, found in by_engine.items():
            rows.append(
                [
                    name,
                    engine,
                    f"{found['median']:.2f}",
                    f"{found['p99']:.2f}",
                    f"{found['mean']:.2f}",
                    f"{found['max']:.1f}",
                    found["answered"],
                ]
            )
    parts.append(table(["pages", "engine", "median ms", "p99 ms", "mean ms", "max ms", "answered"], rows))
    parts.append("")
    parts.append(
        "Times include parsing the query and making the forms (stemming in each language of the index); FTS5's "
        "also looks up each form's page count (the index's term_counts table, kept in memory once read) and "
        "sorts every match, tantivy collects the top 100."
    )
    update = results["update"]
    parts += [
        "",
        f"## 4. Update ({UPDATED_PAGES} pages of {update['directory']} removed and added back, body + one word)",
        "",
    ]
    rows = []
    for engine in BUILDERS:
        compared = update[engine]
        rows.append(
            [
                engine,
                f"{sum(order for order, _, _ in compared)}/{len(compared)}",
                f"{sum(same for _, same, _ in compared)}/{len(compared)}",
                f"{max(diff for _, _, diff in compared):.2e}",
                f"{update[f'{engine}_update_seconds'] * 1000:.0f}",
            ]
        )
    compared = update["tantivy_fresh_twice"]
    rows.append(
        [
            "tantivy: a second fresh build (baseline)",
            f"{sum(order for order, _, _ in compared)}/{len(compared)}",
            f"{sum(same for _, same, _ in compared)}/{len(compared)}",
            f"{max(diff for _, _, diff in compared):.2e}",
            "",
        ]
    )
    parts.append(
        table(["engine", "same ranking as fresh", "identical scores", "max relative score diff", "update ms"], rows)
    )
    state = update["tantivy_state"]
    parts += [
        "",
        f"Changed docIDs {update['changed']} (appended {sorted(set(update['appended'].values()))}). tantivy after the "
        f"update: num_docs {state['updated']['num_docs']} in {state['updated']['segments']} segments "
        f"(fresh: {state['fresh']['num_docs']} in {state['fresh']['segments']}); doc_freq of the appended words "
        f"in body {state['updated']['doc_freq']} (fresh {state['fresh']['doc_freq']})"
        + (
            ": deleted documents stay in tantivy's statistics until their segment is merged, and tantivy-py "
            "exposes no merge. "
            if state["updated"]["doc_freq"] != state["fresh"]["doc_freq"]
            else ". "
        )
        + f"`delete_documents_by_term('doc_id', n)` on the unsigned field left num_docs at "
        f"{update['tantivy_docs_after_delete_by_term']} of {update['pages']}"
        + (
            " (it deletes nothing); `delete_documents_by_query(term_query(...))` works."
            if update["tantivy_docs_after_delete_by_term"] == update["pages"]
            else "."
        ),
    ]
    return "\n".join(parts) + "\n"


def main(argv: list[str]) -> None:
    if argv[:1] == ["--build-worker"]:
        build_worker(*argv[1:4])
        return
    began = time.perf_counter()
    OUT.mkdir(parents=True, exist_ok=True)
    INDEXES.mkdir(parents=True, exist_ok=True)
    digest = analysis_digest()
    guides = sorted(
        path for path in KNOWN_PAGES.iterdir() if GUIDE in path.name and path.is_dir() and "." not in path.name
    )
    if not guides or not (ALL_SITES / "1").is_file():
        raise SystemExit("bench: no known-item pages: run bench/known_item_bench.py first")
    big = [BIG] if (BIG / "1").is_file() and not os.environ.get("CANDIDATES_SMALL") else []
    results: dict = {
        "machine": machine(),
        "load": " ".join(f"{value:.2f}" for value in os.getloadavg()),
        "tantivy_version": getattr(tantivy, "__version__", "0.27.0"),
        "digest": digest,
        "fulltext_digest": hashlib.sha256(
            b"".join(path.read_bytes() for path in sorted((ROOT / "tse_scrapy" / "fulltext").glob("*.py")))
        ).hexdigest()[:12],
    }
    infos = analyze_all([ALL_SITES, *big, *guides], digest)
    results["infos"] = infos
    if big and infos[BIG.name]["digest"] != digest:
        results["notes_cache"] = (
            f"Note: the cache of {BIG.name} was made with analysis source {infos[BIG.name]['digest']} "
            f"(now {digest}); remove {cache_paths(BIG, digest)[0]} to make it again."
        )
    results["builds"] = {}
    for directory in [ALL_SITES, *big]:
        results["builds"][directory.name] = {engine: measured_build(engine, directory, digest) for engine in BUILDS}
        print(f"built {directory.name}: {results['builds'][directory.name]}", file=sys.stderr, flush=True)
    results["mrr"], results["anchor_mismatches"] = mrr_part(guides, digest, infos)
    info = infos[ALL_SITES.name]
    results["mrr_all"] = known_item_row(ALL_SITES.name, info["pages"], info["titles"], info["languages"])
    results["latency"] = {
        directory.name: latency_part(directory.name, infos[directory.name]) for directory in [ALL_SITES, *big]
    }
    update_directory = next((path for path in guides if path.name == UPDATE_DIRECTORY), guides[0])
    results["update"] = update_part(update_directory, digest, infos[update_directory.name]["languages"])
    results["run_seconds"] = time.perf_counter() - began
    text = report(results)
    (OUT / "report.md").write_text(text)
    for info in infos.values():
        info.pop("titles", None)
    (OUT / "results.json").write_text(json.dumps(results, indent=1, default=str))
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
