"""The search web app (Starlette): ``/``, ``/search``, ``/api/search``, ``/saved/DOCID`` (a saved copy
under a banner saying what it is), ``/doc/DOCID`` (the copy alone; ``/doc/DOCID.pdf``: a PDF result as
fetched, to download), ``/healthz``.

Every route only reads.  Everything that comes from a page or from the query
is escaped by the templates (Jinja2 autoescaping); a saved page is sent so
that nothing in it can run or load.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import ipaddress
import json
import logging
import math
import os
import re
import signal
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import parse_qsl, urlencode

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.convertors import Convertor, register_url_convertor
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from ..fulltext.matching import distinct_groups
from ..index.engine import RANKINGS, Answer, QueryEngine
from ..index.pdfs import PdfReads
from ..index.storage import IndexReader
from ..rules.crawling.secrets import mask_url
from ..rules.files import pagedir
from ..rules.queries import searchsnippet
from ..rules.queries.query import BAD_CHARACTER, is_blank
from ..rules.text import analysis
from ..rules.text.acceptlanguage import preferred_languages
from ..rules.text.encodings import browser_label, browser_reads, decode_page, page_encoding
from ..rules.text.pagetext import snippet
from ..rules.text.pdftext import pdf_as_html
from ..rules.web.savedcopy import with_base
from ..rules.web.urls import text_as_shown, url_as_shown
from .answercache import DEFAULT_BYTES, AnswerCache, KeptResponse
from .served import Served, ServedIndex
from .sharedanswers import SharedAnswers

if TYPE_CHECKING:
    from starlette.templating import Jinja2Templates

logger = logging.getLogger(__name__)


class DocIdConvertor(Convertor[int]):
    """A docID in a path (``/doc/{doc_id:docid}``): at most DOCID_DIGITS digits.  Starlette's ``int``
    took any number of them, and ``int()`` refuses past 4,300: a 500, where no such page is a 404."""

    regex = f"[0-9]{{1,{pagedir.DOCID_DIGITS}}}"

    def convert(self, value: str) -> int:
        return int(value)

    def to_string(self, value: int) -> str:
        return str(value)


register_url_convertor("docid", DocIdConvertor())

# How often a worker started again tries to open an index it cannot (create_app_from_environment).
REOPEN_SECONDS = 1.0
PER_PAGE = 10
# The results whose snippet is placed by the query's rarer words (searchsnippet.placed_snippet): the
# first ones of a page, those read most.  Placing costs each about a quarter more than a snippet at the
# first mark of any (bench/RESULTS.md): for all ten, a tenth more of a search's CPU.
PLACED_RESULTS = 5
MAX_PER_PAGE = 100
MAX_PAGE = 1_000_000
PAGE_LINKS = 10  # the pages of results a results page links to by number, around its own
# A page's URL line is shown cut to this many characters (then " …"), and linked to only up to this
# many: a page file made by hand may hold a URL of megabytes (a tester's: 5 MB made each results page
# 15 MB), where a crawl keeps URLs to 2,083 characters (TSE_MAX_URL_LENGTH).
SHOWN_URL_CHARACTERS = 300
LINKED_URL_CHARACTERS = 8192


def shown_url(url: str) -> str:
    """*url* as a page shows it, its secrets masked (``mask_url``, as the CLI shows one): its first
    SHOWN_URL_CHARACTERS, then " …" when longer; its bidirectional controls percent-encoded (a title,
    a snippet are each in an element of their own, which ends their overrides: a URL is read as it is)."""
    url = url_as_shown(mask_url(url))
    return url if len(url) <= SHOWN_URL_CHARACTERS else url[:SHOWN_URL_CHARACTERS] + " \u2026"


def linkable(url: str) -> bool:
    """Whether a page may link to *url*: a web URL (http or https) of LINKED_URL_CHARACTERS or fewer that
    holds no secret (a link would carry it to the browser's history, and to the page)."""
    return (
        len(url) <= LINKED_URL_CHARACTERS and url.lower().startswith(("http://", "https://")) and mask_url(url) == url
    )


# Control characters other than whitespace (a NUL typed in a query, one in a URL) are parse errors in
# HTML, which browsers drop or show as they like: every value a page shows has them as U+FFFD.
_HTML_CONTROLS = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")


def _without_controls(value: object) -> object:
    if isinstance(value, str) and not value.isprintable():  # isprintable: most values, at C speed
        return _HTML_CONTROLS.sub("\ufffd", value)
    return value


# The language menu's names of the languages the analysis knows without a stemmer (those with one are
# named by their stemmer's name: ``analysis.STEMMERS``); another code is shown as it is.
_LANGUAGE_NAMES = {
    "be": "Belarusian", "bg": "Bulgarian", "bn": "Bengali", "he": "Hebrew", "hr": "Croatian", "is": "Icelandic",
    "ja": "Japanese", "ka": "Georgian", "km": "Khmer", "ko": "Korean", "lo": "Lao", "lv": "Latvian",
    "mk": "Macedonian", "ms": "Malay", "my": "Burmese", "sk": "Slovak", "sl": "Slovenian", "sq": "Albanian",
    "th": "Thai", "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese", "zh": "Chinese",
}  # fmt: skip


def language_label(code: str) -> str:
    """How the language menu names *code*: its English name and the code ("French (fr)"), else the code."""
    name = _LANGUAGE_NAMES.get(code) or analysis.STEMMERS.get(code, "").capitalize()
    return f"{name} ({code})" if name else code


@functools.cache
def _templates() -> Jinja2Templates:
    """The pages' templates, made for the first page a process sends: jinja2's import (10 ms of each
    server's start) is no part of an API answer's."""
    from starlette.templating import Jinja2Templates

    templates = Jinja2Templates(directory=str(Path(__file__).resolve().parent / "templates"))
    # The characters that change the direction of the text after them (an override, an embedding, an
    # isolate, a mark): typed in a query, they are shown by their code points where the query is not in
    # an element of its own (the page's title, an error's message), not let reverse what follows.
    templates.env.filters["bidi_shown"] = text_as_shown
    templates.env.filters["shown_url"] = shown_url
    templates.env.finalize = _without_controls
    templates.env.filters["language_label"] = language_label
    return templates


# The app's own pages: inline style only, forms to the app only.
PAGE_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
# The page of a saved copy: the copy in a frame of this server's, under its banner.
SAVED_FRAME_POLICY = PAGE_POLICY + "; frame-src 'self'"
# A saved page: a sandbox (no scripts, forms, plugins, same origin) that loads nothing; a link the reader
# clicks may lead the window it is framed in (its <base> says "_top": rules/web/savedcopy.py) to the site.
SAVED_PAGE_POLICY = "sandbox allow-top-navigation-by-user-activation; default-src 'none'"
SAFE_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
# What a worker process of `tse serve --workers N` serves (set by search/server.py).
ENVIRONMENT_PAGEDIR = "TSE_SERVE_PAGEDIR"
ENVIRONMENT_INDEX = "TSE_SERVE_INDEX"
ENVIRONMENT_HOSTS = "TSE_SERVE_HOSTS"
ENVIRONMENT_CHECKED = "TSE_SERVE_CHECKED"  # the file key of the index whose store the parent found matching the pages
ENVIRONMENT_ANSWER_BYTES = "TSE_SERVE_ANSWER_BYTES"  # tse serve --answer-cache, in bytes
ENVIRONMENT_SHARED_ANSWERS = "TSE_SERVE_SHARED_ANSWERS"  # the directory of the answers the workers share
# A server on loopback answers only requests addressed to loopback: another site's page in
# the user's browser cannot read it through a name of its own that resolves to 127.0.0.1.
LOOPBACK_NAMES = ["127.0.0.1", "localhost"]


class BadParameter(ValueError):
    """A query-string parameter out of its range; the message is for the user."""


class Result(NamedTuple):
    """One search result as the page and the API show it (a named tuple: a page of results makes
    ten a request, and a frozen dataclass is twice as slow to make)."""

    doc_id: int
    url: str
    score: float
    title: str
    snippet: str
    highlights: list[tuple[int, int]]
    live: bool  # the URL may be linked to (http or https)
    lang: str = ""  # the page's language (ISO 639), "" when not known or not rank=relevance
    also: tuple[str, ...] = ()  # the URLs of its duplicates that answered too (rank=relevance)
    pdf: bool = False  # a PDF document: /doc/DOCID shows its text, /doc/DOCID.pdf gives it

    def segments(self) -> list[tuple[str, bool]]:
        """The snippet as (text, highlighted) pieces, for the template to escape and mark."""
        pieces, position = [], 0
        for start, end in self.highlights:
            pieces += [(self.snippet[position:start], False), (self.snippet[start:end], True)]
            position = end
        return [*pieces, (self.snippet[position:], False)]


def allowed_hosts(host: str) -> list[str] | None:
    """The Host header values a server listening on *host* accepts (None: any): on a loopback
    address, only the loopback names and that address (an IPv6 one as a Host header writes it,
    "[::1]"), so that a web page elsewhere cannot read the server through a name of its own resolved
    to the address (DNS rebinding); on any other, the names it is reached by are not known."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    # (An IPv4 address mapped into IPv6, "::ffff:127.0.0.1", which Python does not call loopback.)
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    if not address.is_loopback and not (mapped is not None and mapped.is_loopback):
        return None
    hosts = [*LOOPBACK_NAMES, f"[{host}]" if address.version == 6 else host]
    return hosts if mapped is None else [*hosts, str(mapped)]


def create_app(
    engine: QueryEngine,
    hosts: list[str] | None = None,
    answer_bytes: int = DEFAULT_BYTES,
    shared: SharedAnswers | None = None,
) -> Starlette:
    """The app over a query engine (its index and page directory, opened once, and again when
    ``tse index`` writes the index anew: ``served.ServedIndex``); with *hosts*, requests whose Host header names
    another are refused (400); searches asked again answered from up to *answer_bytes* of kept answers,
    and from the answers the server's processes share (*shared*)."""
    index = ServedIndex(engine)
    pdf_reads = PdfReads()  # this worker's: /doc/DOCID of a PDF
    atexit.register(pdf_reads.close)
    answers = AnswerCache(answer_bytes)

    def kept(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        """*handler*, its answers kept for the index they come from and sent again when asked again."""

        async def answered(request: Request) -> Response:
            served = index.current()
            made_from, key = (served, served.engine.gone), answers.key(request)
            if (response := answers.answer(key, made_from)) is not None:
                return response
            if shared is None or key is None:
                # (The handler takes the same index: nothing runs between, as it awaits nothing before.)
                return answers.keep(key, made_from, await handler(request))
            # Made by another process of the server, from the same files?
            version = index.version()
            if (found := shared.answer(key, version)) is not None:
                return answers.keep(key, made_from, KeptResponse(found))
            response = await handler(request)
            if (keepable := answers.keepable(key, response)) is not None:
                shared.keep(key, version, *keepable)
            return answers.keep(key, made_from, response)

        return answered

    def common(served: Served, line: str, rank: str, language: str | None = None) -> dict[str, Any]:
        relevance = served.default_rank == "relevance"
        return {
            "query": line,
            "rank": rank,
            "lang": language or "",
            "languages": served.languages,
            "relevance": relevance,
        }

    async def home(request: Request) -> Response:
        if not is_blank(request.query_params.get("q", "")):
            # A search URL written by hand or by a browser's site search (``/?q=%s``): the results page.
            return RedirectResponse(f"/search?{request.url.query}", status_code=303)
        served = index.current()
        return _page(request, "home.html", common(served, "", served.default_rank))

    async def search(request: Request) -> Response:
        served = index.current()
        engine, default_rank, languages = served.engine, served.default_rank, served.languages
        line = request.query_params.get("q", "")
        if is_blank(line):
            return RedirectResponse("/", status_code=303)
        asked = request.query_params.get("rank")
        shown_rank = asked if asked in RANKINGS else default_rank
        # The page's language choice stays in its form whatever the ranking (only relevance uses
        # it: with another, the results are in every language, and the page says so).
        kept = _kept_language(request, languages)
        try:
            _check_utf8(request)
            ranking, page = _ranking(request, default_rank), _number(request, "page", 1, MAX_PAGE)
            language = _language(request, ranking, languages) if ranking == "relevance" else None
        except BadParameter as error:
            return _page(request, "results.html", {**common(served, line, shown_rank, kept), "error": str(error)}, 400)
        preferred = _preferred_language(request, languages) if language is None else None
        answer = engine.answer(line, ranking, limit_size=True, language=language, preferred=preferred)
        shown_language = language if ranking == "relevance" else kept
        context = common(served, line, ranking, shown_language)
        if answer is None or answer.error:
            context["error"] = _error_message(answer, ranking)
            return _page(request, "results.html", context, _error_status(answer))
        if ranking != "relevance" and kept is not None:  # (a language of the search index: none without one)
            context["language_ignored"] = True
        pages = max(1, math.ceil(len(answer.ranked) / PER_PAGE))
        suggestion = _suggestion(answer)
        if language is not None and not answer.ranked:
            # None in the language chosen: how many in all of them, for a way out of the filter.
            every = engine.answer(line, ranking, limit_size=True, preferred=language)
            context["every_language_total"] = len(every.ranked) if every is not None and not every.error else 0
        context.update(
            per_page=PER_PAGE,
            total=len(answer.ranked),
            partial=answer.partial,
            missing=answer.missing,
            # (the words but those missing, when a partial answer names these: "the other word", or "some of")
            others=len(distinct_groups(answer.search_query.required)) - len(answer.missing)
            if answer.search_query
            else 0,
            suggestion=suggestion,
            suggestion_url=_search_url(suggestion, ranking, 1, shown_language) if suggestion else None,
            every_language_url=_search_url(line, ranking, 1),
            page=page,
            pages=pages,
            first=(page - 1) * PER_PAGE + 1,
            results=_results(engine, answer, page, PER_PAGE, served.notes.pdfs),
            # Past the last page: the last is the one before.
            prev_url=_search_url(line, ranking, min(page - 1, pages), shown_language) if page > 1 else None,
            next_url=_search_url(line, ranking, page + 1, shown_language) if page < pages else None,
            page_links=[
                (number, None if number == page else _search_url(line, ranking, number, shown_language))
                for number in _page_numbers(page, pages)
            ],
        )
        return _by_reader(_page(request, "results.html", context))

    async def api_search(request: Request) -> Response:
        served = index.current()
        engine, default_rank, languages = served.engine, served.default_rank, served.languages
        line = request.query_params.get("q", "")
        try:
            _check_utf8(request)
            ranking = _ranking(request, default_rank)
            page = _number(request, "page", 1, MAX_PAGE)
            per_page = _number(request, "per_page", PER_PAGE, MAX_PER_PAGE)
            language = _language(request, ranking, languages)
        except BadParameter as error:
            return _json({"error": str(error)}, 400)
        preferred = _preferred_language(request, languages) if language is None else None
        answer = engine.answer(line, ranking, limit_size=True, language=language, preferred=preferred)
        if answer is None or answer.error:
            return _json({"error": _error_message(answer, ranking)}, _error_status(answer))
        results = _results(engine, answer, page, per_page, served.notes.pdfs)
        content: dict[str, Any] = {
            "query": line,
            "rank": ranking,
            "total": len(answer.ranked),
            "page": page,
            "per_page": per_page,
        }
        if ranking == "relevance":
            content.update(
                lang=language, partial=answer.partial, missing=list(answer.missing), suggestion=_suggestion(answer)
            )
        content["results"] = [result_content(result, ranking) for result in results]
        return _by_reader(_json(content))

    def saved_page(engine: QueryEngine, doc_id: int) -> pagedir.Page | None:
        """Page file *doc_id*, or None: a docID with no page, a gone page, a file not readable."""
        if doc_id not in engine.docs.lengths:
            return None
        try:
            return pagedir.read_page(engine.directory, doc_id)
        except (OSError, pagedir.PageFileError):
            return None

    def pdf_view(served: Served, doc_id: int, page: pagedir.Page) -> bytes:
        """What ``/doc/DOCID`` shows of a PDF: its text, read again (``PdfReads``: kept by the page file's
        size and mtime, read once at a time, by the indexer's bounds); none, at once, when the index holds
        none of it (the PDF gave the indexer no text: the view says so rather than read it again)."""
        try:
            stored = served.engine.document(doc_id)
            status = os.stat(pagedir.page_path(served.engine.directory, doc_id))
        except (OSError, ValueError, sqlite3.Error):
            stored, status = None, None
        if stored is not None and not stored.text.strip():
            return _with_note(pdf_as_html(stored.title, ""), "No text was found in this PDF when it was indexed.")
        key = (doc_id, status.st_size, status.st_mtime_ns) if status is not None else (doc_id, len(page.body), None)
        read = pdf_reads.extract(key, page.body)
        html = pdf_as_html(read.title, read.text)
        if read.warning and not read.text.strip():
            return _with_note(html, f"No text could be read from this PDF: {read.warning}.")
        return _with_note(html, f"Only part of this PDF could be read: {read.warning}.") if read.warning else html

    async def saved_copy(request: Request) -> Response:
        served = index.current()
        notes = served.notes
        doc_id = request.path_params["doc_id"]
        page = saved_page(served.engine, doc_id)
        if page is None:
            return missing(request, f"No such document: {request.path_params['doc_id']}.")
        if page.url in notes.pdfs:
            # A PDF is read as the text the search found in it (extracted again, bounded, in a
            # thread: the server goes on answering), a page as sandboxed as any saved page.
            body, charset = await run_in_threadpool(pdf_view, served, doc_id, page), "utf-8"
        else:
            # The charset the page was indexed in (its HTTP header's, noted at crawl time, else its
            # own or detected): the reader sees the text the search found.
            encoding = page_encoding(page.body, notes.charset(page.url))[0]
            body = page.body
            if not browser_reads(encoding):
                # ISO-2022-KR, HZ (one U+FFFD to a browser), UTF-32: the text the search read, as UTF-8.
                body, encoding = decode_page(body, notes.charset(page.url)).encode("utf-8", "replace"), "utf-8"
            # Its relative links lead to the site's pages, not to this server's paths (a password in its
            # URL left out: the copy's links would carry it).
            body, charset = with_base(body, mask_url(page.url, ""), encoding), browser_label(encoding)
        content_type = f"text/html; charset={charset}"
        headers = {**SAFE_HEADERS, "Content-Security-Policy": SAVED_PAGE_POLICY, "Content-Type": content_type}
        return Response(body, headers=headers)

    async def saved_copy_page(request: Request) -> Response:
        """The saved copy (``/doc/DOCID``, in a sandboxed frame) under a banner: whose copy it is, and when
        it was saved (its page file's time)."""
        served = index.current()
        doc_id = request.path_params["doc_id"]
        page = saved_page(served.engine, doc_id)
        if page is None:
            return missing(request, f"No such document: {doc_id}.")
        try:
            mtime = os.stat(pagedir.page_path(served.engine.directory, doc_id)).st_mtime
        except OSError:  # (gone since it was read)
            return missing(request, f"No such document: {doc_id}.")
        try:
            saved: datetime | None = datetime.fromtimestamp(mtime, UTC)
        except (ValueError, OverflowError, OSError):  # a time no date can say (a file's, set by hand): none shown
            saved = None
        # (A URL line that is no UTF-8, in a page file made by hand: its bytes shown as U+FFFD.)
        url = page.url.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        context = {
            **common(served, "", served.default_rank),
            "doc_id": doc_id,
            "url": url,
            "title": served.engine.docs.titles([doc_id]).get(doc_id) or shown_url(url),
            "live": linkable(url),
            "pdf": page.url in served.notes.pdfs,
            "saved": saved.strftime("%Y-%m-%d %H:%M UTC") if saved else "",
            "saved_iso": saved.strftime("%Y-%m-%dT%H:%M:%SZ") if saved else "",
        }
        return _page(request, "saved.html", context, policy=SAVED_FRAME_POLICY)

    async def saved_pdf(request: Request) -> Response:
        """The PDF as fetched, to download (never shown in the browser from here)."""
        doc_id = request.path_params["doc_id"]
        served = index.current()
        page = saved_page(served.engine, doc_id)
        if page is None or page.url not in served.notes.pdfs:
            return missing(request, f"No such PDF: {doc_id}.")
        headers = {
            **SAFE_HEADERS,
            "Content-Security-Policy": SAVED_PAGE_POLICY,
            "Content-Type": "application/pdf",
            "Content-Disposition": f'attachment; filename="{doc_id}.pdf"',
        }
        return Response(page.body, headers=headers)

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok", headers=SAFE_HEADERS)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        watching = index.watch()  # from the start: a process that had no request takes a new index too
        try:
            yield
        finally:
            watching.cancel()

    async def not_found(request: Request, _error: Exception) -> Response:
        """A path of no route: JSON under /api/, else the search page saying so (Starlette's was a
        bare "Not Found", no way back: a tester's find)."""
        if request.url.path.startswith("/api/"):
            return _json({"error": f"no such path: {request.url.path}"}, 404)
        return missing(request, "There is no such page here: search the crawled pages instead.")

    def missing(request: Request, message: str, status: int = 404) -> Response:
        served = index.current()
        return _page(request, "results.html", {**common(served, "", served.default_rank), "error": message}, status)

    async def unreadable(request: Request, error: Exception) -> Response:
        """A file of the index damaged since it was opened (its checks passed then): the document
        store's statements fail.  503 and one line, as for a search index that cannot be read."""
        message = f"the index's document store cannot be read ({error}): run tse index again"
        logger.warning("%s", message)
        if request.url.path.startswith("/api/"):
            return _json({"error": message}, 503)
        return missing(request, message, 503)

    app = Starlette(
        lifespan=lifespan,
        exception_handlers={404: not_found, sqlite3.Error: unreadable},
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts)] if hosts else [],
        routes=[
            Route("/", home),
            Route("/search", kept(search)),
            Route("/api/search", kept(api_search)),
            Route("/saved/{doc_id:docid}", saved_copy_page),
            Route("/doc/{doc_id:docid}", saved_copy),
            Route("/doc/{doc_id:docid}.pdf", saved_pdf),
            Route("/healthz", healthz),
        ],
    )
    app.state.pdf_reads = pdf_reads
    return app


def create_app_from_environment() -> Starlette:
    """The app of one worker process: the page directory and index its parent checked.

    A worker started again (uvicorn starts another when one dies) that cannot open the index (moved
    away meanwhile, say) says so in one line and tries again every REOPEN_SECONDS, the other workers
    answering meanwhile: it failed with a traceback, started again every half second, for good."""
    try:
        engine = _engine_from_environment()
    except Exception as error:
        engine = _engine_when_it_opens(error)
    hosts = os.environ.get(ENVIRONMENT_HOSTS)
    answer_bytes = int(os.environ.get(ENVIRONMENT_ANSWER_BYTES) or DEFAULT_BYTES)
    shared_directory = os.environ.get(ENVIRONMENT_SHARED_ANSWERS)
    shared = SharedAnswers(Path(shared_directory), answer_bytes) if shared_directory and answer_bytes else None
    return create_app(engine, hosts.split(",") if hosts else None, answer_bytes, shared)


def _engine_when_it_opens(error: Exception) -> QueryEngine:
    """The engine of ``create_app_from_environment``, opened once it can be (*error*: why not now);
    meanwhile Ctrl-C or SIGTERM ends the process (uvicorn's handlers only take note of them, for a
    server that has started)."""
    path = os.environ[ENVIRONMENT_INDEX]
    logger.warning("tse serve: a server process cannot open %s (%s): trying it every second", path, error)

    def stop(_number: int, _frame: object) -> None:
        raise SystemExit(0)

    kept = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            time.sleep(REOPEN_SECONDS)
            try:
                engine = _engine_from_environment()
                break
            except Exception:
                continue
    finally:
        for number, action in kept.items():
            signal.signal(number, action)
    logger.warning("tse serve: a server process opened %s again", path)
    return engine


def _engine_from_environment() -> QueryEngine:
    # Forked by the parent right after it found the store matching the page files: not stat'ed again,
    # unless the index is another by now (a worker started again once tse index wrote it anew).
    index = IndexReader(os.environ[ENVIRONMENT_INDEX])
    checked = os.environ.get(ENVIRONMENT_CHECKED) == " ".join(map(str, index.key))
    engine = QueryEngine(os.environ[ENVIRONMENT_PAGEDIR], index, checked)
    try:
        engine.docs  # noqa: B018 (opened now, before the first request)
    except BaseException:
        engine.close()
        raise
    return engine


def _results(
    engine: QueryEngine, answer: Answer, page: int, per_page: int, pdfs: frozenset[str] = frozenset()
) -> list[Result]:
    words = answer.words
    languages = {} if isinstance(engine.search_index, str) else engine.search_index.page_languages
    results = []
    shown = answer.ranked[(page - 1) * per_page : page * per_page]
    aliases = [alias for doc_id, _ in shown for alias in answer.aliases.get(doc_id, ())]
    alias_urls = engine.docs.urls(aliases) if aliases else {}
    # Each result's text and snippet head read together: a page of results is two statements.
    shown_ids = [doc_id for doc_id, _ in shown]
    documents = engine.documents(shown_ids)
    heads = {}
    if answer.search_query is not None and not isinstance(engine.search_index, str):
        heads = engine.search_index.snippet_heads(shown_ids)
    # The marks worked out once for the page's snippets: once a language of its pages when some terms
    # are marked only in some (another language's stems of a word typed).
    # (A page answering a run of Chinese or Japanese by its pieces apart marks its bigrams.)
    prepared: dict[tuple[str, bool], searchsnippet.PreparedMarks] = {}  # by language, and apart or not
    alike: dict[tuple[tuple[frozenset[str], ...], ...], searchsnippet.PreparedMarks] = {}  # by the marks

    def marks_for(doc_id: int) -> searchsnippet.PreparedMarks:
        language = (languages.get(doc_id) or "") if answer.mark_languages else ""
        kind = (language, doc_id in answer.apart)
        if kind not in prepared:
            marks = answer.apart_marks if kind[1] else answer.marks
            if answer.mark_languages:
                marks = searchsnippet.marks_in(marks, answer.mark_languages, language or None)
            key = tuple(map(tuple, marks))
            if key not in alike:
                alike[key] = searchsnippet.PreparedMarks(marks)
            prepared[kind] = alike[key]
        return prepared[kind]

    # The marks that place a snippet's window (``Answer.placing``), by language.
    placing: dict[str, searchsnippet.Placing] = {}

    def placing_for(doc_id: int) -> searchsnippet.Placing:
        language = (languages.get(doc_id) or "") if answer.mark_languages else ""
        if language not in placing:
            marks = answer.placing
            if answer.mark_languages:
                marks = searchsnippet.marks_in(marks, answer.mark_languages, language or None)
            placing[language] = searchsnippet.Placing(marks)
        return placing[language]

    snippets = {}
    unplaced = []  # pages whose stored text holds none of the marks that place a window, but others
    for rank, (doc_id, _) in enumerate(shown):
        document = documents.get(doc_id)
        text = document.text if document else ""
        if answer.search_query is not None:
            lang = languages.get(doc_id, "") or None
            # (A page answering a run by its pieces apart marks them: its first mark places the window.)
            placed_here = answer.placing and doc_id not in answer.apart and rank < PLACED_RESULTS
            places = placing_for(doc_id) if placed_here else None
            shown_text, highlights, placed = searchsnippet.placed_snippet(
                text, marks_for(doc_id), (None, lang), head=heads.get(doc_id), placing=places
            )
            snippets[doc_id] = (shown_text, highlights)
            if places is not None and places.sequences and not placed and highlights:
                unplaced.append(doc_id)
        else:
            snippets[doc_id] = snippet(text, words)
    # A page that matched past the text the store keeps (a long one) shows where it did.
    unmarked = [doc_id for doc_id, (_, highlights) in snippets.items() if not highlights]
    if answer.search_query is not None and unmarked and not isinstance(engine.search_index, str):
        unmarked = [doc_id for doc_id in unmarked if marks_for(doc_id).wanted]
        for doc_id, rest in engine.search_index.rests(unmarked).items() if unmarked else ():
            later = searchsnippet.later_snippet(rest, marks_for(doc_id), (None, languages.get(doc_id) or None))
            if later is not None:
                snippets[doc_id] = later
    # A page whose stored text holds only the query's commoner words shows where it holds a rarer one
    # past it, if it does ("der" of "Partitionierung der Festplatte" found first, a tester's find).
    if unplaced and not isinstance(engine.search_index, str):
        for doc_id, rest in engine.search_index.rests(unplaced).items():
            language = languages.get(doc_id) or None
            later = searchsnippet.later_snippet(
                rest, placing_for(doc_id).together, (None, language), shown=marks_for(doc_id)
            )
            if later is not None:
                snippets[doc_id] = later
    for doc_id, score in shown:
        document = documents.get(doc_id)
        url, title = (document.url, document.title) if document else ("", "")
        lang = languages.get(doc_id, "") if answer.search_query is not None else ""
        snippet_text, highlights = snippets[doc_id]
        live = linkable(url)
        also = tuple(alias_urls[alias] for alias in answer.aliases.get(doc_id, ()) if alias in alias_urls)
        result = Result(
            doc_id, url, score, title or shown_url(url), snippet_text, highlights, live, lang, also, url in pdfs
        )
        results.append(result)
    return results


def _with_note(html: bytes, note: str) -> bytes:
    """A PDF's page (``pdf_as_html``) with *note*, tse's and said so, after its text."""
    shown = f"<hr><p><em>tse: {escape(note, quote=False)}</em></p>\n".encode()
    return html.replace(b"</body>", shown + b"</body>", 1)


def result_content(result: Result, ranking: str) -> dict[str, Any]:
    """A result as ``/api/search``'s JSON gives it (its URL's password masked; ``lang``, ``also`` and
    ``pdf`` with rank=relevance only)."""
    content: dict[str, Any] = {
        "docid": result.doc_id,
        "url": mask_url(result.url),
        "score": result.score,
        "title": result.title,
        "snippet": result.snippet,
        "highlights": result.highlights,
    }
    if ranking == "relevance":
        content.update(lang=result.lang, also=[mask_url(url) for url in result.also], pdf=result.pdf)
    return content


def _suggestion(answer: Answer) -> str | None:
    """The query line with its corrected words, when a word was corrected."""
    if not answer.corrections or answer.search_query is None:
        return None
    return answer.search_query.typed(answer.corrections)


def _check_utf8(request: Request) -> None:
    """BadParameter when the URL's query has percent-escapes of bytes that are no UTF-8 (Starlette
    reads each such byte as U+FFFD: ``deb%C3ian`` was a search for "deb\ufffdian")."""
    # A byte that is no UTF-8 is read as U+FFFD: only a query holding one is parsed again, strictly (a
    # replacement character may also be typed).
    if not any("\ufffd" in key or "\ufffd" in value for key, value in request.query_params.multi_items()):
        return
    query = request.scope.get("query_string", b"")
    try:
        parse_qsl(query.decode("latin-1"), keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        message = "the query string must be UTF-8: bytes of it, or a percent-escape in it, encode no character"
        raise BadParameter(message) from None


def _ranking(request: Request, default: str) -> str:
    ranking = request.query_params.get("rank", default).strip().lower()  # (RELEVANCE as relevance)
    if ranking not in RANKINGS:
        raise BadParameter(f"rank must be one of {', '.join(RANKINGS)}")
    return ranking


def _language(request: Request, ranking: str, known: list[str]) -> str | None:
    """The lang= asked for, one of the index's languages *known*."""
    asked = request.query_params.get("lang") or None
    if asked is None:
        return None
    if ranking != "relevance":
        raise BadParameter("lang= needs rank=relevance")
    language = analysis.language_code(asked)  # a tag as browsers send them: PT, pt-BR, zh_CN
    if language is None and (code := analysis.no_language_code(asked)):
        raise BadParameter(f"lang={code} names no one language: leave lang out to search every language")
    if language is None:
        raise BadParameter("lang must be a language code such as en, fr or ja")
    if known and language not in known:  # (no search index: the answer says so)
        raise BadParameter(
            f"no page of the index is in language {language} (its languages: {', '.join(sorted(known))})"
        )
    return language


def _preferred_language(request: Request, known: list[str]) -> str | None:
    """The first of the languages the reader's browser asks for (``Accept-Language``) that the index's
    pages are in (*known*), or None: its pages rank higher where no lang= keeps the results to one."""
    return next((code for code in preferred_languages(request.headers.get("accept-language")) if code in known), None)


def _kept_language(request: Request, known: list[str]) -> str | None:
    """The lang= asked for as the page's language menu shows it: one of the index's languages
    *known*, else None ("All languages")."""
    asked = request.query_params.get("lang") or None
    language = analysis.language_code(asked) if asked else None
    return language if language in known else None


def _error_message(answer: Answer | None, ranking: str) -> str:
    """What an answer that is no results says: the querier's message; with rank=tse or rank=bm25, a
    character of a word in another alphabet says why (a tester took "bad character 'é'" for a fault)."""
    if answer is None:
        return "Error: the query is empty."
    message = answer.error or ""
    if ranking != "relevance" and message.startswith(BAD_CHARACTER) and not answer.index_failed:
        message += f" rank={ranking} reads words of ASCII letters only, as the TSE querier does:"
        message += " rank=relevance reads any language."
    return message


def _error_status(answer: Answer | None) -> int:
    """An answer's error as an HTTP status: 503 when the index failed (the server's fault, until
    `tse index` is run again), 400 when the query did (the client's)."""
    return 503 if answer is not None and answer.index_failed else 400


def _number(request: Request, name: str, default: int, highest: int) -> int:
    text = request.query_params.get(name)
    if text is None:
        return default
    if not (text.isascii() and text.isdigit() and len(text) <= 7 and 1 <= int(text) <= highest):
        raise BadParameter(f"{name} must be a whole number from 1 to {highest}")
    return int(text)


def _page_numbers(page: int, pages: int) -> range:
    """The pages of results a results page links to by number: up to PAGE_LINKS around *page* (of
    *pages*), none when there is one page or *page* is past the last."""
    if pages <= 1 or page > pages:
        return range(0)
    first = max(1, min(page - PAGE_LINKS // 2, pages - PAGE_LINKS + 1))
    return range(first, min(pages, first + PAGE_LINKS - 1) + 1)


def _search_url(line: str, ranking: str, page: int, language: str | None = None) -> str:
    parameters: dict[str, str | int] = {"q": line, "rank": ranking, "page": page}
    if language:
        parameters["lang"] = language
    return "/search?" + urlencode(parameters)


def _page(
    request: Request, template: str, context: dict[str, Any], status: int = 200, policy: str = PAGE_POLICY
) -> Response:
    headers = {**SAFE_HEADERS, "Content-Security-Policy": policy}
    return _templates().TemplateResponse(request, template, context, status_code=status, headers=headers)


def _by_reader(response: Response) -> Response:
    """*response*, saying that it is ranked by the reader's Accept-Language (for caches between)."""
    response.headers["Vary"] = "Accept-Language"
    return response


def _json(content: dict[str, Any], status: int = 200) -> Response:
    # orjson: the JSON of Starlette's JSONResponse (byte for byte on 300 known-item answers; a float's
    # exponent may be written 1e-6 for 1e-06), in a fifth of its time: 40 us less a page of results.
    try:
        body = orjson.dumps(content)
    except TypeError:
        # An integer past 64 bits, which orjson refuses (a 500): rank=tse's score sums the counts of an OR's
        # words, and an index file's counts are a user's numbers.  Python's json writes any, as Starlette's did.
        body = json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")
    return Response(body, status, headers=SAFE_HEADERS, media_type="application/json")
