"""Known-item search (issue 27): can a reader find a page again by typing its title?

The corpus is real documentation no one here wrote, from Debian packages
(bench/install-docs.sh installs the missing ones): the installation guide in
19 languages, the Debian Reference in 6, the New Maintainers' Guide in Russian
and Vietnamese, the Debian FAQ in Korean, and the Python 3.11 documentation.
Each manual in each language is one "site", written as the page directory a
breadth-first crawl of it alone would make (from its index page, following
links inside its folder; pages no link reaches come last, one level deeper);
one more page directory holds every site together.  They are built once, with
their indexes, under bench/work/known-item/.

For every index, a `tse serve` on 127.0.0.1 answers, for each ranking, each
page's own title as a query, in four spellings (as typed, letters only, with a
typo, without accents); the reciprocal rank of the page in the top 100,
averaged, is the MRR.  Titles that two pages of one index share (ignoring case)
are left out.  Then, on the all-sites index with rank=relevance: quoted
phrases taken from pages (the page must be found; the reversed phrase must
find no page that lacks it), exclusions (`a -b` must return no page holding
b), and the latency of titles sent by 8 keep-alive clients.  Run by
bench/run.py; alone: bench/known_item_bench.py [titles] [phrases] [latency]
(KNOWN_ITEM_RANKINGS=bm25 to measure only some of RANKINGS).
"""

from __future__ import annotations

import dataclasses
import gzip
import http.client
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import unicodedata
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, unquote, urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPEAT, ROOT, WORK
from bench.search_bench import HOST, Server, ensure_index, get
from tse_scrapy.rules.files import pagedir
from tse_scrapy.rules.text.pagetext import page_title, visible_text
from tse_scrapy.rules.web.links import extract_links_html
from tse_scrapy.search.app import PER_PAGE

RANKINGS = ["bm25", "relevance"]
# KNOWN_ITEM_RANKINGS=bm25 (say) measures only those: a slow ranking under work can take long.
RANKINGS = [rank for rank in os.environ.get("KNOWN_ITEM_RANKINGS", "").split(",") if rank] or RANKINGS
PHRASE_RANK = "relevance"  # phrases and exclusions; the latency, when the server has it
TOP = 100
SEED = 1
PHRASES = 200
EXCLUSIONS = 200
CLIENTS = 8  # the latency's clients
QUERY_CLIENTS = 4  # clients sending the titles, phrases and exclusions (to 2 worker processes on 2 cores)
LATENCY_SECONDS = 20.0  # for each page size of LATENCY_PAGES, split over REPEAT rounds
WARM_UP = 400  # titles sent before the latency's rounds, not counted
PARTS = ("titles", "phrases", "latency")
KNOWN = WORK / "known-item"
INSTALL_DOCS = ROOT / "bench" / "install-docs.sh"
SETS = ("as typed", "letters only", "typo", "no accents")
PYTHON_SETS = ("as typed", "letters only")
# Languages not written in the Latin, Greek or Cyrillic script: no "no accents" set.
CJK_LANGUAGES = frozenset({"ja", "ko", "zh-cn"})
# fmt: off
INSTALLATION_GUIDE_LANGUAGES = (
    "ca", "cs", "da", "de", "el", "en", "es", "fr", "id", "it", "ja", "ko", "nl", "pt", "ro", "ru", "sv", "vi", "zh_CN",
)
# fmt: on
DEBIAN_REFERENCE_LANGUAGES = ("de", "en", "es", "fr", "ja", "zh-cn")
MAINT_GUIDE_LANGUAGES = ("ru", "vi")
ALL = "all-sites"
_LETTER_RUN = re.compile(r"[^\W\d_]+")
_WORD = re.compile(r"[^\W\d_]{3,}")
_ANY_WORD = re.compile(r"\w+")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_CHARACTER = re.compile(f"[{_CJK}]")
_CJK_RUN = re.compile(f"[{_CJK}]{{3,}}")
_RANK_REFUSED = "rank must be one of"


@dataclass(frozen=True)
class Site:
    """One manual in one language, crawled alone: the files of *folder* whose names end in *suffix*."""

    package: str  # the Debian package
    manual: str  # the URL's first path segment
    language: str
    folder: Path
    suffix: str = ".html"
    start: str = "index.html"
    recursive: bool = False

    @property
    def name(self) -> str:
        return f"{self.manual}-{self.language}"

    @property
    def label(self) -> str:
        return f"{self.manual} {self.language}"

    @property
    def base(self) -> str:
        return f"http://{HOST}/{self.manual}/{self.language}/"

    @property
    def python(self) -> bool:
        return self.manual.startswith("python")


def site_of(all_sites: list[Site], url: str) -> Site:
    """The site a page URL (``http://HOST/MANUAL/LANGUAGE/PATH``) belongs to."""
    base = "/".join(url.split("/", 5)[:5]) + "/"
    return next(site for site in all_sites if site.base == base)


def sites() -> list[Site]:
    guide = Path("/usr/share/doc/installation-guide-amd64")
    found = [
        Site("installation-guide-amd64", "installation-guide", folder.lower().replace("_", "-"), guide / folder)
        for folder in INSTALLATION_GUIDE_LANGUAGES
    ]
    found += [
        Site(
            f"debian-reference-{lang}",
            "debian-reference",
            lang,
            Path("/usr/share/debian-reference"),
            f".{lang}.html",
            f"index.{lang}.html",
        )
        for lang in DEBIAN_REFERENCE_LANGUAGES
    ]
    found += [
        Site(
            f"maint-guide-{lang}",
            "maint-guide",
            lang,
            Path(f"/usr/share/doc/maint-guide-{lang}/html"),
            f".{lang}.html",
            f"index.{lang}.html",
        )
        for lang in MAINT_GUIDE_LANGUAGES
    ]
    found.append(
        Site("debian-faq-ko", "debian-faq", "ko", Path("/usr/share/doc/debian/FAQ/ko"), ".ko.html", "index.ko.html")
    )
    found.append(
        Site("python3.11-doc", "python3.11-doc", "en", Path("/usr/share/doc/python3.11-doc/html"), recursive=True)
    )
    return found


# ---------------------------------------------------------------- the corpus


@dataclass
class Corpus:
    """What building the page directories found: gzipped pages, pages no link reaches."""

    gzipped: Counter = field(default_factory=Counter)
    unreached: Counter = field(default_factory=Counter)
    build_seconds: float = 0.0
    index_seconds: float = 0.0
    built: bool = False


def site_files(site: Site, corpus: Corpus) -> dict[str, bytes]:
    """The site's pages by path relative to its folder (a gzipped page under its name without .gz)."""
    files = {}
    if site.recursive:
        names = [
            os.path.relpath(os.path.join(top, name), site.folder)
            for top, _, here in os.walk(site.folder, followlinks=True)
            for name in here
        ]
    else:
        names = os.listdir(site.folder)
    for name in sorted(names):
        if name.endswith(site.suffix + ".gz"):
            relative = name[: -len(".gz")]
            if relative not in names:
                files[relative] = gzip.decompress((site.folder / name).read_bytes())
                corpus.gzipped[site.label] += 1
        elif name.endswith(site.suffix):
            files[name] = (site.folder / name).read_bytes()
    if site.start not in files:
        raise SystemExit(f"bench: {site.folder / site.start} not found (package {site.package})")
    return files


def crawl_order(site: Site, files: dict[str, bytes], corpus: Corpus) -> list[pagedir.Page]:
    """The site's pages in breadth-first order from its start page, as a crawl of it alone
    saves them (depth = link distance); the pages no link reaches after them, one deeper."""
    depths = {site.start: 0}
    queue = deque([site.start])
    order = []
    while queue:
        relative = queue.popleft()
        order.append(relative)
        for link in extract_links_html(files[relative], site.base + quote(relative)):
            if not link.startswith(site.base):
                continue
            target = unquote(link[len(site.base) :].split("?", 1)[0])
            if target == "" or target.endswith("/"):
                target += "index.html"
            if target in files and target not in depths:
                depths[target] = depths[relative] + 1
                queue.append(target)
    deepest = max(depths.values()) + 1
    for relative in sorted(files):
        if relative not in depths:
            depths[relative] = deepest
            order.append(relative)
            corpus.unreached[site.label] += 1
    return [pagedir.Page(site.base + quote(relative), depths[relative], files[relative]) for relative in order]


def write_directory(directory: Path, pages: list[pagedir.Page]) -> None:
    """A page directory holding *pages* as 1, 2, 3 ..., written under another name and then renamed."""
    partial = directory.with_name(directory.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    pagedir.mark(partial)
    for doc_id, page in enumerate(pages, 1):
        pagedir.write_page(partial, doc_id, page)
    partial.rename(directory)


def index_path(name: str) -> Path:
    return KNOWN / f"{name}.index"


def build(all_sites: list[Site]) -> Corpus:
    """Every site's page directory and the all-sites one, with their indexes, when missing."""
    corpus = Corpus()
    pages_root = KNOWN / "pages"
    names = [site.name for site in all_sites] + [ALL]
    began = time.perf_counter()
    if not all((pages_root / name / "1").is_file() for name in names):
        corpus.built = True
        subprocess.run([str(INSTALL_DOCS), *dict.fromkeys(site.package for site in all_sites)], check=True)
        together = []
        for site in all_sites:
            pages = crawl_order(site, site_files(site, corpus), corpus)
            together += pages
            if not (pages_root / site.name / "1").is_file():
                shutil.rmtree(pages_root / site.name, ignore_errors=True)
                _remove_index(site.name)
                write_directory(pages_root / site.name, pages)
        if not (pages_root / ALL / "1").is_file():
            shutil.rmtree(pages_root / ALL, ignore_errors=True)
            _remove_index(ALL)
            write_directory(pages_root / ALL, together)
    corpus.build_seconds = time.perf_counter() - began
    began = time.perf_counter()
    code = max(path.stat().st_mtime for path in (ROOT / "tse_scrapy").rglob("*.py"))
    for name in names:
        index = index_path(name)
        if index.is_file() and index.stat().st_mtime < code:
            _remove_index(name)  # written by older code: its sidecars may lack what this one reads
        ensure_index(pages_root / name, index)
    corpus.index_seconds = time.perf_counter() - began
    return corpus


def _remove_index(name: str) -> None:
    """The index and every file beside it (``INDEXFILE.*``)."""
    for path in [index_path(name), *KNOWN.glob(f"{name}.index.*")]:
        path.unlink(missing_ok=True)


# ---------------------------------------------------------------- the queries


@dataclass(frozen=True)
class Known:
    """A page of an index, its language (or site) and its title."""

    doc_id: int
    group: str
    language: str
    title: str


def known_items(directory: Path, group_of) -> tuple[list[Known], int, int]:
    """The pages with a title no other page of the directory has (ignoring case); also the
    number of pages and of pages left out (no title, or a shared one)."""
    pages = []
    for doc_id, page in pagedir.read_pages(directory):
        group, language = group_of(page.url)
        pages.append(Known(doc_id, group, language, page_title(page.body)))
    shared = Counter(page.title.casefold() for page in pages)
    kept = [page for page in pages if page.title and shared[page.title.casefold()] == 1]
    return kept, len(pages), len(pages) - len(kept)


def letters_only(title: str) -> str:
    """Everything but letters (category L*) and whitespace made a space."""
    kept = "".join(c if unicodedata.category(c).startswith("L") or c.isspace() else " " for c in title)
    return " ".join(kept.split())


def typo(title: str) -> str | None:
    """Two adjacent letters swapped in the middle of the title's longest word (of 4 letters or
    more); None when there is none, when the swap changes nothing, or for a CJK title without spaces."""
    if _CJK_CHARACTER.search(title) and len(title.split()) == 1:
        return None
    words = list(_LETTER_RUN.finditer(title))
    if not words:
        return None
    longest = max(words, key=lambda word: len(word.group()))
    word = longest.group()
    if len(word) < 4:
        return None
    i = len(word) // 2 - 1
    swapped = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if swapped == word:
        return None
    return title[: longest.start()] + swapped + title[longest.end() :]


def no_accents(title: str, language: str) -> str | None:
    """The title without combining marks, when that changes it, in a Latin, Greek or Cyrillic language."""
    if language in CJK_LANGUAGES:
        return None
    plain = unicodedata.normalize(
        "NFC", "".join(c for c in unicodedata.normalize("NFD", title) if unicodedata.category(c) != "Mn")
    )
    return plain if plain != title else None


def spellings(item: Known) -> dict[str, str]:
    """The query of each set that has one for this title."""
    queries = {"as typed": item.title, "letters only": letters_only(item.title) or None}
    queries["typo"] = typo(item.title)
    queries["no accents"] = no_accents(item.title, item.language)
    return {name: query for name, query in queries.items() if query}


def api_path(query: str, rank: str, page: int = 1, per_page: int | None = TOP) -> str:
    """The API request for *query*; *per_page* None: the server's default page of results."""
    asked = {"q": query, "rank": rank, "page": page} | ({"per_page": per_page} if per_page else {})
    return "/api/search?" + urlencode(asked)


def ask_all(port: int, paths: list[str], clients: int) -> list[tuple[int, dict | None, float]]:
    """Each path's (status, JSON answer, ms), sent by *clients* threads with a keep-alive connection each."""
    answers: list[tuple[int, dict | None, float]] = [(0, None, 0.0)] * len(paths)
    pending = iter(range(len(paths)))
    lock = threading.Lock()

    def client() -> None:
        connection = http.client.HTTPConnection(HOST, port, timeout=60)
        while True:
            with lock:
                i = next(pending, None)
            if i is None:
                break
            sent = time.perf_counter()
            try:
                connection.request("GET", paths[i])
                response = connection.getresponse()
                body = response.read()
                elapsed = (time.perf_counter() - sent) * 1000
                answers[i] = (response.status, json.loads(body) if body.startswith(b"{") else None, elapsed)
            except (OSError, http.client.HTTPException, ValueError):
                answers[i] = (0, None, (time.perf_counter() - sent) * 1000)
                connection.close()  # reopened by the next request
        connection.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def ranking_available(port: int, rank: str) -> bool:
    """False when the server refuses the ranking itself (not yet built)."""
    status, body = get(port, api_path("debian", rank))
    return not (status == 400 and _RANK_REFUSED in body.decode("utf-8", "replace"))


def reciprocal_rank(status: int, answer: dict | None, doc_id: int) -> float:
    """1/rank of *doc_id* in the answer's first TOP results; 0 when absent, for a 400
    (the query refused) and for anything else (counted as an error)."""
    if status != 200 or answer is None:
        return 0.0
    for rank, result in enumerate(answer["results"][:TOP], 1):
        if result["docid"] == doc_id:
            return 1 / rank
    return 0.0


@dataclass
class Scores:
    """Reciprocal ranks per (group, set, ranking); None for a ranking the server refuses."""

    ranks: dict = field(default_factory=dict)
    refused: Counter = field(default_factory=Counter)  # 400s per ranking
    errors: Counter = field(default_factory=Counter)  # other failures per ranking
    counts: Counter = field(default_factory=Counter)  # titles per (group, set)
    times: dict = field(default_factory=dict)  # ms a query per (set, ranking)

    def mrr(self, group: str, query_set: str, rank: str) -> float | None:
        values = self.ranks.get((group, query_set, rank))
        return None if values is None or not values else statistics.fmean(values)


def score_titles(port: int, items: list[Known], available: dict[str, bool], clients: int, scores: Scores) -> None:
    jobs = [(item, name, query) for item in items for name, query in spellings(item).items()]
    for item, name, _ in jobs:
        scores.counts[item.group, name] += 1
    for rank in RANKINGS:
        if not available[rank]:
            continue
        answers = ask_all(port, [api_path(query, rank) for _, _, query in jobs], clients)
        for (item, name, _), (status, answer, elapsed) in zip(jobs, answers, strict=True):
            scores.ranks.setdefault((item.group, name, rank), []).append(reciprocal_rank(status, answer, item.doc_id))
            scores.times.setdefault((name, rank), []).append(elapsed)
            if status == 400:
                scores.refused[rank] += 1
            elif status != 200:
                scores.errors[rank] += 1


def serve(name: str, workers: int | None) -> Server:
    server = Server(KNOWN / "pages" / name, index_path(name), workers)
    server.first_answer("/healthz")
    return server


@dataclass
class Titles:
    """The titles part: scores per site and in the all-sites index, the rankings the server has."""

    available: dict[str, bool]
    alone: Scores
    together: Scores
    pages: dict[str, int]  # per site, and ALL
    left_out: dict[str, int]
    seconds: float = 0.0


def titles_part(all_sites: list[Site]) -> Titles:
    began = time.perf_counter()

    def group_of(url: str) -> tuple[str, str]:
        site = site_of(all_sites, url)
        return (site.label if site.python else site.language), site.language

    alone, together = Scores(), Scores()
    pages, left_out = {}, {}
    available = {}
    for site in all_sites:
        items, pages[site.name], left_out[site.name] = known_items(
            KNOWN / "pages" / site.name, lambda _, s=site: (s.label, s.language)
        )
        # One worker process starts in 0.5 s, the default two in 1.5 s: enough for bm25's
        # 0.1 s of queries a site, not for a ranking whose queries take tens of ms.
        slow = any(available.get(rank) for rank in RANKINGS if rank not in ("tse", "bm25"))
        server = serve(site.name, None if slow else 1)
        try:
            if not available:
                available = {rank: ranking_available(server.port, rank) for rank in RANKINGS}
            score_titles(server.port, items, available, QUERY_CLIENTS, alone)
        finally:
            server.stop()
    items, pages[ALL], left_out[ALL] = known_items(KNOWN / "pages" / ALL, group_of)
    server = serve(ALL, None)
    try:
        score_titles(server.port, items, available, QUERY_CLIENTS, together)
    finally:
        server.stop()
    return Titles(available, alone, together, pages, left_out, time.perf_counter() - began)


# ---------------------------------------------------------------- phrases and exclusions


class Texts:
    """The visible text and title of the all-sites pages, casefolded and single-spaced, read when
    first asked for."""

    def __init__(self):
        self.directory = KNOWN / "pages" / ALL
        self.cache: dict[int, str] = {}
        self.titles: dict[int, str] = {}
        self.loose: dict[int, tuple[str, str]] = {}

    def text(self, doc_id: int) -> str:
        if doc_id not in self.cache:
            body = pagedir.read_page(self.directory, doc_id).body
            self.cache[doc_id] = visible_text(body, 1 << 30).casefold()
            self.titles[doc_id] = " ".join((page_title(body) or "").split()).casefold()
        return self.cache[doc_id]

    def holds(self, doc_id: int, sequence: str) -> tuple[bool, bool]:
        """Whether the page's text or title holds *sequence* (casefolded): as it is; and as
        consecutive words, punctuation between them and combining marks ignored."""
        texts = (self.text(doc_id), self.titles[doc_id])
        if any(sequence in text for text in texts):
            return True, True
        if doc_id not in self.loose:
            self.loose[doc_id] = (loose_words(texts[0]), loose_words(texts[1]))
        return False, any(loose_words(sequence) in loose for loose in self.loose[doc_id])


def loose_words(text: str) -> str:
    """The words of *text* without their combining marks, single-spaced, with a space before and after."""
    plain = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    return " " + " ".join(_ANY_WORD.findall(plain)) + " "


@dataclass
class Phrases:
    """Counts of the phrases and exclusions part."""

    phrases: int = 0
    found: int = 0
    phrase_failures: int = 0  # non-200 answers
    reversed_returned: int = 0
    reversed_wrong: int = 0  # pages lacking the reversed phrase even with punctuation and accents ignored
    reversed_wrong_strict: int = 0  # pages lacking it as it is
    exclusions: int = 0
    excluded_returned: int = 0
    excluded_wrong: int = 0
    exclusion_failures: int = 0
    examples: dict[str, list[str]] = field(default_factory=lambda: {"reversed": [], "exclusion": [], "failed": []})

    def failed(self, query: str, status: int, answer: dict | None) -> None:
        if status != 200 and len(self.examples["failed"]) < 4:
            error = (answer or {}).get("error", "")
            self.examples["failed"].append(f"`{query}`: {status} {error!r}")

    seconds: float = 0.0


def pick_phrase(text: str, cjk: bool, rng: random.Random) -> list[str] | None:
    """Three consecutive words of the text (all letters), or three CJK characters for a CJK page."""
    if cjk:
        runs = [run.group() for run in _CJK_RUN.finditer(text)]
        if runs:
            run = rng.choice(runs)
            start = rng.randrange(len(run) - 2)
            return list(run[start : start + 3])
    tokens = text.split()
    starts = [i for i in range(len(tokens) - 2) if all(_LETTER_RUN.fullmatch(t) for t in tokens[i : i + 3])]
    if not starts:
        return None
    start = rng.choice(starts)
    return tokens[start : start + 3]


def queries_of_pages(order: list[int], languages: dict[int, str], texts: Texts, rng: random.Random):
    """PHRASES (page, phrase, reversed phrase) and EXCLUSIONS (a, b) from the pages in *order*."""
    phrases = []
    for doc_id in order:
        if len(phrases) == PHRASES:
            break
        cjk = languages[doc_id] in CJK_LANGUAGES
        words = pick_phrase(visible_text(pagedir.read_page(texts.directory, doc_id).body, 1 << 30), cjk, rng)
        if words is not None:
            joiner = "" if cjk else " "
            phrases.append((doc_id, joiner.join(words), joiner.join(reversed(words))))
    exclusions = []
    for doc_id in order:
        if len(exclusions) == EXCLUSIONS:
            break
        words = list(dict.fromkeys(w for w in _WORD.findall(texts.text(doc_id)) if not _CJK_CHARACTER.search(w)))
        if len(words) >= 2:
            exclusions.append(tuple(rng.sample(words, 2)))
    return phrases, exclusions


def doc_ids(answer: dict | None) -> list[int]:
    return [result["docid"] for result in answer.get("results", [])] if answer else []


def phrases_part(pages: int, languages: dict[int, str]) -> Phrases | None:
    """None when the server refuses PHRASE_RANK."""
    began = time.perf_counter()
    result = Phrases()
    texts = Texts()
    rng = random.Random(SEED)
    phrases, exclusions = queries_of_pages(rng.sample(range(1, pages + 1), pages), languages, texts, rng)
    server = serve(ALL, None)
    try:
        if not ranking_available(server.port, PHRASE_RANK):
            return None
        paths = [api_path(f'"{phrase}"', PHRASE_RANK) for _, phrase, _ in phrases]
        paths += [api_path(f'"{backwards}"', PHRASE_RANK) for _, _, backwards in phrases]
        paths += [api_path(f"{a} -{b}", PHRASE_RANK) for a, b in exclusions]
        answers = ask_all(server.port, paths, QUERY_CLIENTS)
        forward, backward, excluding = (
            answers[: len(phrases)],
            answers[len(phrases) : -len(exclusions)],
            answers[-len(exclusions) :],
        )
        for (doc_id, phrase, backwards), (status, answer, _), (back_status, back_answer, _) in zip(
            phrases, forward, backward, strict=True
        ):
            result.phrases += 1
            result.phrase_failures += (status != 200) + (back_status != 200)
            result.failed(f'"{phrase}"', status, answer)
            result.failed(f'"{backwards}"', back_status, back_answer)
            result.found += status == 200 and found_on_later_pages(server.port, f'"{phrase}"', answer, doc_id)
            returned = doc_ids(back_answer)
            result.reversed_returned += len(returned)
            held = [texts.holds(d, backwards.casefold()) for d in returned]
            result.reversed_wrong_strict += sum(not strict for strict, _ in held)
            wrong = [d for d, (_, loose) in zip(returned, held, strict=True) if not loose]
            result.reversed_wrong += len(wrong)
            if wrong and len(result.examples["reversed"]) < 4:
                result.examples["reversed"].append(f'`"{backwards}"` (from doc {doc_id}) returned doc {wrong[0]}')
        for (a, b), (status, answer, _) in zip(exclusions, excluding, strict=True):
            result.exclusions += 1
            result.exclusion_failures += status != 200
            result.failed(f"{a} -{b}", status, answer)
            returned = doc_ids(answer)
            result.excluded_returned += len(returned)
            holding = re.compile(rf"\b{re.escape(b)}\b")
            wrong = [(d, where) for d in returned if (where := holding.search(texts.text(d)))]
            result.excluded_wrong += len(wrong)
            if wrong and len(result.examples["exclusion"]) < 4:
                d, where = wrong[0]
                result.examples["exclusion"].append(
                    f"`{a} -{b}` returned doc {d}, whose text holds {b} at character {where.start():,}"
                    f" of {len(texts.text(d)):,}"
                )
    finally:
        server.stop()
    result.seconds = time.perf_counter() - began
    return result


def found_on_later_pages(port: int, query: str, answer: dict, doc_id: int) -> bool:
    """Whether *doc_id* is among the query's results: on the answer's page, or on the next ones."""
    page = 1
    while doc_id not in doc_ids(answer):
        if page * TOP >= answer["total"] or not answer["results"]:
            return False
        page += 1
        status, body = get(port, api_path(query, PHRASE_RANK, page))
        if status != 200:
            return False
        answer = json.loads(body)
    return True


# ---------------------------------------------------------------- latency


@dataclass
class Round:
    """One round of the latency part."""

    latencies: list[float]  # sorted
    ok: int
    refused: int
    errors: int
    wall: float
    # The latencies of the requests that asked a title first in the round (by any client): a server
    # keeping answers (search/answercache.py) sends the later ones from memory.
    first_asked: list[float] = dataclasses.field(default_factory=list)

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies)

    @property
    def first_asked_p50(self) -> float:
        return statistics.median(self.first_asked) if self.first_asked else float("nan")

    @property
    def p99(self) -> float:
        return self.latencies[int(len(self.latencies) * 0.99)]

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.wall


# The pages of results the latency asks for: the server's default first page (what a person's search
# shows), and TOP results a page (what the MRR tables read).
LATENCY_PAGES = (None, TOP)


def latency_part(queries: list[str]) -> tuple[dict[int | None, list[Round]], float, str]:
    """A warm-up (WARM_UP titles, not counted), then, for each of LATENCY_PAGES, REPEAT rounds of
    CLIENTS clients each sending the titles in its own seeded order until the round's time is up;
    with rank=relevance, or bm25 when the server refuses relevance."""
    began = time.perf_counter()
    server = serve(ALL, None)
    try:
        rank = PHRASE_RANK if PHRASE_RANK in RANKINGS and ranking_available(server.port, PHRASE_RANK) else "bm25"
        ask_all(server.port, [api_path(query, rank) for query in queries[:WARM_UP]], CLIENTS)
        rounds: dict[int | None, list[Round]] = {per_page: [] for per_page in LATENCY_PAGES}
        for n in range(REPEAT):  # the page sizes in turn, in an order that alternates
            for per_page in LATENCY_PAGES if n % 2 == 0 else LATENCY_PAGES[::-1]:
                rounds[per_page].append(_latency_round(server.port, queries, rank, n, per_page))
    finally:
        server.stop()
    return rounds, time.perf_counter() - began, rank


def _latency_round(port: int, queries: list[str], rank: str, number: int, per_page: int | None = TOP) -> Round:
    seconds = LATENCY_SECONDS / REPEAT
    lock = threading.Lock()
    outcomes: list[tuple[float, str, float, int]] = []  # (ms, kind, sent at, the title's number)
    ready = threading.Barrier(CLIENTS + 1, timeout=60)

    def client(i: int) -> None:
        order = list(range(len(queries)))
        random.Random(SEED + 100 * number + i).shuffle(order)
        paths = [api_path(queries[title], rank, per_page=per_page) for title in order]
        connection = http.client.HTTPConnection(HOST, port, timeout=30)
        connection.connect()
        done = []
        ready.wait()
        stop = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < stop:
            sent = time.perf_counter()
            try:
                connection.request("GET", paths[n % len(paths)])
                response = connection.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                status = 0
                connection.close()
            kind = "ok" if status == 200 else "refused" if status == 400 and rank == "bm25" else "error"
            done.append(((time.perf_counter() - sent) * 1000, kind, sent, order[n % len(paths)]))
            n += 1
        connection.close()
        with lock:
            outcomes.extend(done)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    ready.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    kinds = Counter(kind for _, kind, _, _ in outcomes)
    asked: set[int] = set()
    first_asked = []
    for ms, _, _, title in sorted(outcomes, key=lambda outcome: outcome[2]):
        if title not in asked:
            asked.add(title)
            first_asked.append(ms)
    latencies = sorted(ms for ms, _, _, _ in outcomes)
    return Round(latencies, kinds["ok"], kinds["refused"], kinds["error"], wall, sorted(first_asked))


# ---------------------------------------------------------------- the report


def cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def mrr_table(scores: Scores, groups: list[str], kind: str, available: dict[str, bool], python: list[str]) -> list[str]:
    """One row a group (of a *kind*: sites, languages): for each set its number of titles and its MRR
    under each ranking; then the mean over the groups and the worst, the Python docs (*python*) apart."""
    header = "| | " + " | ".join(f"{name}: titles | " + " | ".join(RANKINGS) for name in SETS) + " |"
    rows = [header, "|---" * (1 + len(SETS) * (1 + len(RANKINGS))) + "|"]

    def value(group: str, name: str, rank: str) -> float | None:
        if not available[rank]:
            return None
        return scores.mrr(group, name, rank)

    def row(group: str, shown: tuple[str, ...]) -> str:
        cells = []
        for name in SETS:
            count = scores.counts[group, name]
            if name not in shown or not count:
                cells += ["-"] * (1 + len(RANKINGS))
                continue
            cells.append(str(count))
            cells += [cell(value(group, name, rank)) for rank in RANKINGS]
        return f"| {group} | " + " | ".join(cells) + " |"

    mean, worst = [], []
    for name in SETS:
        members = [g for g in groups if scores.counts[g, name]]
        mean.append(str(sum(scores.counts[g, name] for g in members)))
        worst.append("")
        for rank in RANKINGS:
            values = [(value(g, name, rank), g) for g in members]
            if not members or not available[rank]:
                mean.append("n/a" if members else "-")
                worst.append("n/a" if members else "-")
                continue
            mean.append(cell(statistics.fmean(v for v, _ in values)))
            low, where = min(values, key=lambda pair: pair[0])  # the first of equals, in the table's order
            worst.append(f"{low:.3f} ({where})")
    rows.append(f"| **mean over the {len(groups)} {kind}** | " + " | ".join(mean) + " |")
    rows.append("| **worst** | " + " | ".join(worst) + " |")
    rows += [row(group, SETS) for group in groups]
    rows += [row(group, PYTHON_SETS) for group in python]
    return rows


def corpus_table(all_sites: list[Site], titles: Titles | None) -> list[str]:
    rows = [
        "| site (URL prefix) | Debian package | source | pages | left out (no title, or shared) |",
        "|---|---|---|---|---|",
    ]
    for site in all_sites:
        files = (
            f"`{site.folder}/`"
            + (f" `*{site.suffix}`" if site.suffix != ".html" else "")
            + (" (tree)" if site.recursive else "")
        )
        pages = len(pagedir_ids(site.name))
        left = str(titles.left_out[site.name]) if titles else "-"
        rows.append(f"| `{site.base}` | {site.package} | {files} | {pages} | {left} |")
    left = str(titles.left_out[ALL]) if titles else "-"
    rows.append(f"| all of them in one page directory | | | {len(pagedir_ids(ALL))} | {left} |")
    return rows


def pagedir_ids(name: str) -> list[str]:
    return [entry for entry in os.listdir(KNOWN / "pages" / name) if pagedir.is_page_name(entry)]


def titles_section(titles: Titles, all_sites: list[Site]) -> list[str]:
    sites_alone = [site.label for site in all_sites if not site.python]
    python = [site.label for site in all_sites if site.python]
    languages = sorted({site.language for site in all_sites if not site.python})
    refused = ", ".join(f"{rank} {titles.alone.refused[rank] + titles.together.refused[rank]}" for rank in RANKINGS)
    errors = ", ".join(f"{rank} {titles.alone.errors[rank] + titles.together.errors[rank]}" for rank in RANKINGS)
    missing = [rank for rank in RANKINGS if not titles.available[rank]]
    return [
        f"### 1. Titles, each site in its own index ({titles.seconds:.0f} s with the next table)",
        "",
        "MRR (reciprocal rank of the page in the top 100, averaged over its titles). Sets: *as typed* is the",
        "`<title>` text (whitespace collapsed); *letters only* has every character that is not a letter (Unicode",
        "L*) or a space made a space; *typo* swaps the two letters in the middle of the title's longest word of",
        "4+ letters (a title without one, or where the swap changes nothing, or a CJK title without spaces, has",
        "none); *no accents* drops the combining marks (NFD, Mn, NFC), for titles it changes, in languages of",
        "the Latin, Greek and Cyrillic scripts.  A 400 answer (a query the ranking refuses) is reciprocal rank 0.",
        f"400 answers, both tables: {refused}; other failures: {errors}."
        + (f"  n/a: rank={', '.join(missing)} was refused by the server (`{_RANK_REFUSED} ...`)." if missing else ""),
        "The mean and the worst are over the manual-language sites; the Python docs are shown apart, with two sets.",
        "",
        *mrr_table(titles.alone, sites_alone, "sites", titles.available, python),
        "",
        f"### 2. Titles in the all-sites index ({titles.pages[ALL]} pages), per language",
        "",
        "The same queries against the one index of every site, each language's titles pooled over its manuals",
        f"(pages left out, no title or one shared in this index: {titles.left_out[ALL]}). Mean and worst are over",
        f"the {len(languages)} languages; the Python docs apart.",
        "",
        *mrr_table(titles.together, languages, "languages", titles.available, python),
        "",
        f"Time a title query took in the all-sites index ({QUERY_CLIENTS} clients at once, `tse serve` by default),"
        " request sent to answer read, in ms:",
        "",
        *time_table(titles.together, titles.available),
        "",
    ]


def time_table(scores: Scores, available: dict[str, bool]) -> list[str]:
    rows = [
        "| ranking | " + " | ".join(f"{name}: p50 | p99" for name in SETS) + " |",
        "|---" * (1 + 2 * len(SETS)) + "|",
    ]
    for rank in RANKINGS:
        cells = []
        for name in SETS:
            times = sorted(scores.times.get((name, rank), []))
            if not available[rank] or not times:
                cells += ["n/a" if not available[rank] else "-"] * 2
                continue
            cells += [f"{statistics.median(times):.1f}", f"{times[int(len(times) * 0.99)]:.1f}"]
        rows.append(f"| {rank} | " + " | ".join(cells) + " |")
    return rows


def phrases_section(result: Phrases | None, pages: int) -> list[str]:
    lines = [f"### 3. Phrases and exclusions (rank={PHRASE_RANK}, all-sites index)", ""]
    if PHRASE_RANK not in RANKINGS:
        return [*lines, f"Not run: rank={PHRASE_RANK} is not among the rankings measured ({', '.join(RANKINGS)}).", ""]
    if result is None:
        return [
            *lines,
            f"n/a: the server refuses rank={PHRASE_RANK} (`{_RANK_REFUSED} ...`); nothing was measured.",
            "",
        ]
    lines += [
        f"{result.phrases} pages of the {pages} (seed {SEED}): three consecutive words of each page's visible text",
        "(all letters; on a Japanese, Korean or Chinese page three consecutive Han, Kana or Hangul characters,",
        'no spaces), queried as `"w1 w2 w3"`: the page must be among the results (pages after the first read',
        "until it is). The reversed phrase: no page of its first 100 results may lack it, in its visible text or title",
        "casefolded and single-spaced (wrong: lacking it even with punctuation between the words and combining",
        "marks ignored; strictly: lacking it as it is). Exclusions: "
        f"{result.exclusions} queries `a -b`, a and b two words (3+ letters,",
        "not CJK) of one page: no page of the first 100 results may hold b as a word in its visible text",
        f"(casefolded, `\\b` in Python's Unicode mode). {result.seconds:.0f} s.",
        "",
        "| check | queries | results read | wrong | failed requests (non-200) | goal |",
        "|---|---|---|---|---|---|",
        f"| the phrase finds its page | {result.phrases} | - | {result.phrases - result.found} not found"
        f" ({result.found}/{result.phrases} found) | {result.phrase_failures} | all found |",
        f"| the reversed phrase returns only pages holding it | {result.phrases} | {result.reversed_returned}"
        f" | {result.reversed_wrong} (strictly: {result.reversed_wrong_strict}) | (above) | 0 wrong |",
        f"| `a -b` returns no page holding b | {result.exclusions} | {result.excluded_returned}"
        f" | {result.excluded_wrong} | {result.exclusion_failures} | 0 wrong |",
        "",
    ]
    for kind, examples in result.examples.items():
        if examples:
            lines += [f"Wrong results ({kind}), the first {len(examples)}: " + "; ".join(examples) + ".", ""]
    return lines


def latency_section(rounds: dict[int | None, list[Round]], seconds: float, rank: str, queries: int) -> list[str]:
    fallback = (
        ""
        if rank == PHRASE_RANK
        else f" (rank={PHRASE_RANK} is refused by the server: rank=bm25 instead)"
        if PHRASE_RANK in RANKINGS
        else f" (rank={PHRASE_RANK} not measured: rank=bm25 instead)"
    )
    repeat = len(next(iter(rounds.values())))
    lines = [
        f"### 4. Latency: titles with rank={rank}{fallback}, all-sites index",
        "",
        f"`tse serve` by default on the all-sites index; {CLIENTS} clients, one keep-alive `http.client` connection",
        f"each, each sending the {queries} as-typed titles of that index in its own seeded order, after a warm-up",
        f"({min(WARM_UP, queries)} titles, not counted); for the server's first page of results ({PER_PAGE},",
        f"what a person's search shows) and for {TOP} results a page (what the MRR tables read), {repeat} rounds"
        f" of {LATENCY_SECONDS / repeat:.1f} s each, in turn, medians ({seconds:.0f} s in all).",
        "Errors: any answer other than 200"
        + (" and 400 (the titles bm25 refuses: digits, non-ASCII letters)." if rank == "bm25" else "."),
        "",
        "| rank | results a page | requests | 200 | 400 (refused by bm25) | errors | p50 ms | p99 ms | requests/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for per_page, measured in rounds.items():
        p50 = statistics.median(r.p50 for r in measured)
        p99 = statistics.median(r.p99 for r in measured)
        rate = statistics.median(r.rate for r in measured)
        lines.append(
            f"| {rank} | {per_page or f'the first page ({PER_PAGE})'} | {sum(len(r.latencies) for r in measured)}"
            f" | {sum(r.ok for r in measured)} | {sum(r.refused for r in measured)} | {sum(r.errors for r in measured)}"
            f" | {p50:.1f} | {p99:.1f} | {rate:.0f} |"
        )
    return [*lines, ""]


def run(parts: tuple[str, ...] = PARTS) -> list[str]:
    began = time.perf_counter()
    all_sites = sites()
    corpus = build(all_sites)
    titles = titles_part(all_sites) if "titles" in parts else None
    languages, all_titles = {}, []
    for doc_id, page in pagedir.read_pages(KNOWN / "pages" / ALL):
        languages[doc_id] = site_of(all_sites, page.url).language
        all_titles.append(page_title(page.body))
    shared = Counter(title.casefold() for title in all_titles)
    queries = [title for title in all_titles if title and shared[title.casefold()] == 1]
    phrases = phrases_part(len(all_titles), languages) if "phrases" in parts and PHRASE_RANK in RANKINGS else None
    sections = []
    if "latency" in parts:
        rounds, seconds, rank = latency_part(queries)
        sections = latency_section(rounds, seconds, rank, len(queries))
    minutes = (time.perf_counter() - began) / 60
    gzipped = ", ".join(f"{label} {n}" for label, n in corpus.gzipped.items()) or "none"
    unreached = ", ".join(f"{label} {n}" for label, n in corpus.unreached.items()) or "none"
    built = (
        f"built the page directories in {corpus.build_seconds:.0f} s (gzipped pages decompressed: {gzipped};"
        f" pages no link reaches: {unreached}), then"
        if corpus.built
        else "page directories from bench/work/known-item/;"
    )
    return [
        "## Known-item search (issue 27): finding a page by its title, phrases, exclusions",
        "",
        f"Run on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {minutes:.1f} min: {built} indexed what was not"
        f" ({corpus.index_seconds:.0f} s). Rankings: {', '.join(RANKINGS)}.",
        "Real documentation from Debian packages (`bench/install-docs.sh`), each manual in each language a site of",
        "its own: its pages in the order a breadth-first crawl of it alone saves them (from its index page, following",
        "the links of `links=html` inside its folder; pages no link reaches last, one level deeper), at",
        f"`http://{HOST}/MANUAL/LANGUAGE/PATH`; one more page directory holds every site (bench/known_item_bench.py).",
        "Left out: pages without a title, and titles that two pages of the same index share (ignoring case).",
        "",
        *corpus_table(all_sites, titles),
        "",
        *(titles_section(titles, all_sites) if titles else []),
        *(phrases_section(phrases, len(all_titles)) if "phrases" in parts else []),
        *sections,
    ]


if __name__ == "__main__":
    chosen = tuple(sys.argv[1:]) or PARTS
    if not set(chosen) <= set(PARTS):
        raise SystemExit(f"usage: known_item_bench.py [{'] ['.join(PARTS)}]")
    start = time.perf_counter()
    print("\n".join(run(chosen)))
    print(f"({time.perf_counter() - start:.0f} s)", file=sys.stderr)
