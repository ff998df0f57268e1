"""The ``tse`` command: the TSE programs with the reference argument order."""

from __future__ import annotations

import argparse
import gc
import io
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager as ContextManager
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, NoReturn

from .exitcodes import BROKEN_PIPE, FAILED, INTERRUPTED, OK, TERMINATED, USAGE
from .rules.crawling.secrets import mask_secrets, shown_message

if TYPE_CHECKING:
    from redis.retry import Retry

    from .distributed.store import RedisCrawl

# Each command imports what it needs when it runs: `tse query` starts without
# loading Scrapy, and a crawl of one process without loading Redis.


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, no usage dump: the reference printed a single message.
        self.exit(USAGE, f"{self.prog}: {message}\n")

    def parse_args(  # type: ignore[override]
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        # Arguments no parser took are refused by the command's parser, named as its other errors are
        # (`tse report: unrecognized arguments: -o x.html`), not by the top one (`tse: ...`).
        options, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self._subcommands().get(getattr(options, "command", None) or "", self)
            command.error(f"unrecognized arguments: {' '.join(extras)}")
        return options

    def _subcommands(self) -> dict[str, argparse.ArgumentParser]:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}


def _port(text: str) -> int:
    if not (text.isascii() and text.isdigit() and int(text) <= 65535):
        raise argparse.ArgumentTypeError(f"a port is a number from 0 to 65535: {text}")
    return int(text)


def _cores() -> int:
    """The cores this process may run on: its CPU affinity (taskset, a cgroup's cpuset), else the machine's."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no sched_getaffinity (macOS, Windows)
        return os.cpu_count() or 1


def _jobs(text: str) -> int:
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 256):
        raise argparse.ArgumentTypeError(f"jobs is a number from 1 to 256: {text}")
    return int(text)


def _page_limit(text: str) -> int:
    """--max-pages: a whole number of pages, at least 1 (0 would be no limit, a negative one no end)."""
    from .rules.crawling.crawlargs import ArgumentError, check_page_limit

    try:
        return check_page_limit(text, "--max-pages", none=False)
    except ArgumentError:
        raise argparse.ArgumentTypeError(f"a whole number of pages, at least 1: {text}") from None


def _patience(text: str) -> float:
    """--redis-patience: seconds, 0 or more (0: a worker stops at the first outage; nan would wait for ever)."""
    from .rules.crawling.crawlargs import duration_seconds

    try:
        return duration_seconds(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the patience is a number of seconds, 0 or more: {text}") from None


MAX_INTERVAL = 86_400  # status --every: seconds at most
# status --every: seconds at least (0 is as often as this): a reader follows no more than ten lines a second,
# and each look is several Redis commands on the server the crawl's workers share.
MIN_INTERVAL = 0.1


def _interval(text: str) -> float:
    """status --every: seconds, 0 or more, finite (the rule of the crawl's durations: -1, nan and inf were a
    traceback from the sleep)."""
    from .rules.crawling.crawlargs import duration_seconds

    try:
        seconds = duration_seconds(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the interval is a number of seconds, 0 or more: {text}") from None
    if seconds > MAX_INTERVAL:  # (1e10 s was an OverflowError from the sleep: a tester's find)
        raise argparse.ArgumentTypeError(f"the interval is at most {MAX_INTERVAL:,} seconds (a day): {text}")
    return seconds


def _setting(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE: {text}")
    return name, value


# The indexer's and querier's commands: (help, description, positional arguments).
_FILE_COMMANDS = {
    "index": (
        "index the pages of PAGEDIR into INDEXFILE",
        "Write the inverted index of PAGEDIR to INDEXFILE (sorted text), plus INDEXFILE.bin for a fast "
        "querier start and INDEXFILE.docs (titles, snippets, lengths) for tse serve and BM25.",
        [("pagedir", "PAGEDIR"), ("indexfile", "INDEXFILE")],
    ),
    "indextest": (
        "load OLDINDEX and write it back to NEWINDEX",
        "Load OLDINDEX and write the same (word, docID, count) triples to NEWINDEX.",
        [("old", "OLDINDEX"), ("new", "NEWINDEX")],
    ),
    "query": (
        "answer queries from stdin with PAGEDIR and INDEXFILE",
        "Read queries from stdin, one a line, until end of input: words, "
        "'and' (also implied between words) and 'or'; 'and' binds tighter.",
        [("pagedir", "PAGEDIR"), ("indexfile", "INDEXFILE")],
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tse", description="The Tiny Search Engine on Scrapy.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    crawl = commands.add_parser(
        "crawl",
        help="crawl from SEED into PAGEDIR down to MAXDEPTH",
        description="Crawl internal pages from SEED into PAGEDIR (which must exist), "
        "at most MAXDEPTH (0-10) links away. The progress log goes to stdout; stderr gets a status line "
        "with an ETA (on a terminal), Scrapy's warnings and errors, and a one-line summary at the end.",
    )
    crawl.add_argument("seed", metavar="SEED", nargs="?", help="the first URL, or several comma-separated")
    crawl.add_argument("pagedir", metavar="PAGEDIR", nargs="?")
    crawl.add_argument("depth", metavar="MAXDEPTH", nargs="?")
    crawl.add_argument(
        "--order",
        help="tse (reference stack order, default), bfs (the only order of a distributed crawl), "
        "or priority (most linked-to first)",
    )
    crawl.add_argument("--links", help="html (standards-based, default) or tse (the reference scanner)")
    crawl.add_argument(
        "--prefix", help="internal URL prefix(es), comma-separated (default http://cs50tse.cs.dartmouth.edu/tse/)"
    )
    crawl.add_argument("--allow", help="only URLs matching one of these regular expressions (comma-separated)")
    crawl.add_argument(
        "--ignore-robots-meta",
        action="store_true",
        help="--links html: follow nofollow pages' links and index noindex pages (X-Robots-Tag, robots <meta>)",
    )
    crawl.add_argument("--deny", help="no URL matching any of these regular expressions (comma-separated)")
    crawl.add_argument(
        "--deny-ext",
        dest="deny_ext",
        help="instead of the TSE rule (.htm* pages only), refuse these extensions "
        "(comma-separated; 'scrapy' for Scrapy's list)",
    )
    crawl.add_argument(
        "--pdf",
        action="store_true",
        help="--links html: also fetch, save and index PDF documents under the prefix (.pdf or application/pdf)",
    )
    crawl.add_argument(
        "--sitemaps",
        action="store_true",
        help="--links html: crawl the URLs of the prefixes' sitemaps (robots.txt Sitemap: lines, "
        "else PREFIX/sitemap.xml) from depth 0, as seeds",
    )
    crawl.add_argument(
        "--render",
        action="store_true",
        help="--links html: load HTML pages in headless Chromium and keep the document its scripts render "
        "(docs/crawling.md)",
    )
    crawl.add_argument(
        "--max-pages", dest="max_pages", type=_page_limit, metavar="N", help="stop after exactly N saved pages (N >= 1)"
    )
    crawl.add_argument(
        "--resume", action="store_true", help="continue the interrupted crawl whose pages are in PAGEDIR"
    )
    crawl.add_argument(
        "--update",
        action="store_true",
        help="re-crawl the finished crawl in PAGEDIR in place: unchanged pages keep their files, "
        "changed ones are rewritten under their docID, new ones get new docIDs, gone ones are listed in .tse-gone",
    )
    crawl.add_argument(
        "--validators",
        action="store_true",
        help="record each page's ETag, Last-Modified and history in PAGEDIR/.tse-pages.sqlite, "
        "so that a later --update asks the server only for what changed",
    )
    crawl.add_argument(
        "--changes", metavar="FILE", help="with --update: write one JSON line per page (new, changed, unchanged, gone)"
    )
    crawl.add_argument(
        "--warc",
        metavar="FILE",
        help="archive every HTTP exchange in FILE (.warc.gz, WARC/1.1, with a .cdxj index beside it); "
        "implies --validators",
    )
    crawl.add_argument(
        "--record",
        metavar="FILE",
        help="write one JSON line per request to FILE (appended to on --resume); tse report plots it",
    )
    crawl.add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        help="no status line (it is shown only when stderr is a terminal)",
    )
    crawl.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="show Scrapy's log: -v from INFO, -vv from DEBUG (default: warnings and errors)",
    )
    crawl.add_argument("--log-file", dest="log_file", metavar="FILE", help="write Scrapy's log to FILE (from INFO)")
    crawl.add_argument(
        "--redis",
        metavar="URL",
        nargs="?",
        const="env",
        help="share the crawl with other workers through this Redis (TSE_REDIS_URL); "
        "without URL, the environment variable TSE_REDIS_URL gives it (out of process lists); "
        "a worker joining a running crawl needs only --redis and --name",
    )
    crawl.add_argument(
        "--redis-patience",
        type=_patience,
        metavar="SECONDS",
        help="how long a worker waits for an unreachable Redis before it stops (default 300; 0: not at all)",
    )
    crawl.add_argument(
        "--migrate",
        action="store_true",
        help="convert a distributed crawl begun by an earlier version (pickled requests) to data, then join it",
    )
    crawl.add_argument("--name", help="the distributed crawl's name (default: derived from the seeds)")
    crawl.add_argument("--keep", action="store_true", help="keep a finished distributed crawl's keys in Redis")
    crawl.add_argument(
        "-s",
        dest="settings",
        action="append",
        type=_setting,
        default=[],
        metavar="NAME=VALUE",
        help="set a Scrapy setting (may be repeated)",
    )
    status = commands.add_parser(
        "status",
        help="show the progress of a distributed crawl",
        description="Print a distributed crawl's pages saved, frontier, leased pages, "
        "URLs seen and workers, once or every INTERVAL seconds.",
    )
    # (NAME optional for argparse: "--redis NAME", as `tse crawl --redis --name X` is typed, takes NAME as
    # the URL; status() gives it back.)
    status.add_argument("name", metavar="NAME", nargs="?")
    status.add_argument(
        "--redis",
        metavar="URL",
        nargs="?",
        const="env",
        default="env",
        help="the crawl's Redis (default: the environment variable TSE_REDIS_URL)",
    )
    status.add_argument(
        "--every", type=_interval, metavar="INTERVAL", help="repeat every INTERVAL seconds until interrupted"
    )
    for name, (summary, description, positionals) in _FILE_COMMANDS.items():
        command = commands.add_parser(name, help=summary, description=description)
        for dest, metavar in positionals:
            command.add_argument(dest, metavar=metavar)
        if name == "index":
            command.add_argument(
                "--update",
                action="store_true",
                help="read only the pages new, changed or gone since INDEXFILE was written",
            )
            command.add_argument(
                "--jobs",
                type=_jobs,
                default=_cores(),
                metavar="N",
                help="processes reading the pages (default: the cores it may use; 1: no worker processes); "
                "memory grows with N",
            )
        if name == "query":
            command.add_argument(
                "--rank",
                choices=("tse", "bm25", "relevance"),
                default="tse",
                help="tse (SPEC 4 scores, default), bm25, or relevance (the search index and the search box's "
                "query language: docs/search.md)",
            )
    archive_import = commands.add_parser(
        "import",
        help="turn web archives (WARC, WARC.gz, WACZ) into a page directory",
        description="Make a page file of every 200 HTML response (and PDF with --pdf) of the archives, one "
        "per URL (its last capture), in PAGEDIR (an existing empty directory, as for tse crawl): then "
        "tse index, tse serve and tse report take it.  Details: docs/import.md.",
    )
    archive_import.add_argument("archives", metavar="ARCHIVE", nargs="+", help="a WARC, WARC.gz or WACZ file")
    archive_import.add_argument("pagedir", metavar="PAGEDIR")
    archive_import.add_argument("--pdf", action="store_true", help="import PDF documents too")
    archive_import.add_argument(
        "--record",
        metavar="FILE",
        help="write a crawl record of the archives' pages and answers (JSON lines) for tse report",
    )
    report = commands.add_parser(
        "report",
        help="turn crawl records into one HTML report with plots",
        description="Read the crawl records (tse crawl --record) of one crawl, resumed runs and "
        "distributed workers merged, and write a self-contained HTML report.",
    )
    report.add_argument("records", metavar="RECORD", nargs="+", help="a crawl record (JSON lines)")
    report.add_argument("--out", default="report.html", metavar="FILE", help="the report (default report.html)")
    serve = commands.add_parser(
        "serve",
        help="search PAGEDIR and INDEXFILE in a browser",
        description="Serve a search page, a JSON API (/api/search) and the saved pages over HTTP.",
    )
    serve.add_argument("pagedir", metavar="PAGEDIR")
    serve.add_argument("indexfile", metavar="INDEXFILE")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8000, help="the port to listen on (default 8000; 0: any)")
    serve.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="server processes, each answering on its own core (default: the cores, at most 4)",
    )
    serve.add_argument(
        "--head-timeout",
        type=float,
        metavar="SECONDS",
        help="close a connection whose request line and headers are not whole within SECONDS "
        "of its start or of the previous answer (default 15; from 1 to 3600)",
    )
    serve.add_argument(
        "--answer-cache",
        type=float,
        metavar="MB",
        help="keep up to MB megabytes of answers in each server process, and as many shared by the "
        "processes, to send again when the same search is asked again (default 16; 0: none kept)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    options = parser.parse_args(argv)
    if options.command is None:
        parser.print_help(sys.stderr)
        return USAGE
    handler = {
        "crawl": crawl,
        "status": status,
        "index": index,
        "indextest": indextest,
        "query": query,
        "serve": serve,
        "report": report,
        "import": import_command,
    }[options.command]
    try:
        return handler(options)
    except _Failed as failed:
        return failed.status
    except Terminated:
        sys.stderr.write(f"tse {options.command}: terminated\n")
        return TERMINATED
    except KeyboardInterrupt:
        # Before Scrapy has installed its own Ctrl-C handling.
        sys.stderr.write(f"tse {options.command}: interrupted\n")
        return INTERRUPTED


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a service manager's stop) taken as Ctrl-C is: the work stopped,
    what it had begun to write removed."""


@contextmanager
def _terminated_as_interrupted() -> Iterator[None]:
    """Within, SIGTERM raises Terminated (once: a second one does not cut the clean-up short); only in
    the main thread, where Python handles signals.  Without it, ``tse index`` died at once, its
    temporary files and its lock left behind and a worker running on to its range's end."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(_signal: int, _frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        # Put back only if still ours: once terminated (or its clean-up begun), SIGTERM stays ignored
        # until the process has exited 143 (put back, a second SIGTERM on the way out killed it: -15, seen
        # in CI under load).
        if signal.getsignal(signal.SIGTERM) is terminate:
            signal.signal(signal.SIGTERM, previous)


def _one_line(command: str, message: str, status: int = FAILED) -> int:
    """Say *message* (any password in it masked, its control characters escaped) on stderr as
    `tse COMMAND: message`; return *status*."""
    sys.stderr.write(f"tse {command}: {shown_message(message)}\n")
    return status


def _index_warnings_said_by(command: str) -> None:
    """The index's warnings (``tse_scrapy.index``'s loggers: "no document store ...: reading the pages for
    titles and snippets") said on stderr as `tse COMMAND: message`, as the command's own lines are: without
    a handler, Python's last resort wrote the bare message.  For the commands that are no Scrapy crawl
    (which configures logging itself); a forked server worker keeps it."""
    logger = logging.getLogger("tse_scrapy.index")
    for handler in [h for h in logger.handlers if getattr(h, "tse_command", None)]:
        logger.removeHandler(handler)  # (a command run before in this process: one line a warning)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"tse {command}: %(message)s"))
    handler.setLevel(logging.WARNING)
    handler.tse_command = command  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.propagate = False


class Refused(ValueError):
    """A file argument that cannot be used; the message is for the user."""


def _require_writable(path: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise Refused(f"{path} is a directory")
    if not os.path.isdir(directory):
        raise Refused(f"cannot write {path}: no directory {directory}")
    if not os.access(directory, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise Refused(f"cannot write {path}: permission denied")


class _Failed(Exception):
    def __init__(self, status: int):
        self.status = status


@contextmanager
def _one_line_errors(command: str, path: str, status: int = FAILED) -> Iterator[None]:
    """What a user's files can make a command fail with: one line on stderr, exit *status*."""
    import sqlite3

    import apsw

    from .fulltext.store import SEARCH_SUFFIX
    from .index.docstore import DOCS_SUFFIX
    from .index.indexer import PageDirError
    from .index.indexlock import IndexLocked
    from .index.workers import WorkerDied
    from .rules.files.indexfile import IndexFileError
    from .rules.files.outputfile import OutputFileRefused
    from .rules.files.pagedir import PageFileError

    refusals = (Refused, PageDirError, PageFileError, IndexFileError, WorkerDied, IndexLocked, OutputFileRefused)
    try:
        yield
    except refusals as error:
        raise _Failed(_one_line(command, str(error), status)) from None
    except sqlite3.Error as error:  # the document store beside the index
        raise _Failed(_one_line(command, f"{path}{DOCS_SUFFIX}: {error}", status)) from None
    except apsw.Error as error:  # the search index beside it (a full disk, say)
        raise _Failed(_one_line(command, f"{path}{SEARCH_SUFFIX}: {error}", status)) from None
    except OSError as error:
        # (A file read by its descriptor names the descriptor's number: an INDEXFILE that is a directory
        # said "3: Is a directory".  The path named then is the command's.)
        named = error.filename if isinstance(error.filename, (str, bytes, os.PathLike)) else None
        raise _Failed(_one_line(command, f"{os.fsdecode(named or path)}: {error.strerror}", status)) from None


def index(options: argparse.Namespace) -> int:
    from .index.indexer import (
        check_index_outside_crawl,
        check_page_directory,
        remove_leftover_runs,
        unfinished_crawl,
        write_index_files,
    )
    from .index.indexlock import index_lock
    from .index.update import update_index
    from .rules.files.indexfile import INDEX_FILE
    from .rules.files.outputfile import check_output_file

    warnings: list[tuple[int, str, str]] = []

    def warn(doc_id: int, url: str, why: str) -> None:
        warnings.append((doc_id, url, why))

    ends: list[int] = []  # where the walk ended (the last: an update may give way to a full build)
    with _terminated_as_interrupted(), _one_line_errors("index", options.indexfile), _pdf_warnings_shown(warnings):
        check_page_directory(options.pagedir, options.indexfile)
        check_index_outside_crawl(options.pagedir, options.indexfile)
        _require_writable(options.indexfile)
        # Only an index, an empty file or nothing is replaced, as indextest's NEWINDEX: checked before
        # anything is written (the lock file included).
        check_output_file(options.indexfile, INDEX_FILE)
        if unfinished := unfinished_crawl(options.pagedir):
            sys.stderr.write(f"tse index: warning: {shown_message(unfinished)}\n")
        # Held until the last file is in place: a second tse index of INDEXFILE meanwhile is refused
        # before it writes anything (the update and the full build it may give way to alike).
        with index_lock(options.indexfile) as held:
            if held:  # no other tse index of INDEXFILE runs: the temporary directories a killed one left go
                remove_leftover_runs(options.indexfile)
            try:
                problem = None
                if options.update:
                    problem = update_index(options.pagedir, options.indexfile, warn, options.jobs, ends.append)
                    if problem is not None:
                        warnings.clear()
                        sys.stderr.write(f"tse index: cannot update: {shown_message(problem)}; indexing every page\n")
                if not options.update or problem is not None:
                    with _index_progress_bar(options.pagedir) as bar:
                        write_index_files(
                            options.pagedir,
                            options.indexfile,
                            jobs=options.jobs,
                            on_page=bar.update if bar is not None else None,
                            on_warning=warn,
                            on_end=ends.append,
                        )
            except MemoryError:  # in this process (a worker's is WorkerDied): a huge page, say
                raise _Failed(_one_line("index", "out of memory")) from None
            except KeyboardInterrupt:
                # Workers stopped, temporary files removed: it exits, and a Ctrl-C more would only make
                # the interpreter die of SIGINT on the way out instead of exiting 130.
                import signal

                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                raise
    if ends:
        _warn_of_pages_past_the_end(options.pagedir, ends[-1])
    return OK


def _warn_of_pages_past_the_end(directory: str, end: int) -> None:
    """One line on stderr when the walk ended at docID *end* with page files past it, which the
    index leaves out as SPEC 3's indexer does (it reads pages 1, 2, ... until one cannot be opened)."""
    from .index.pagefiles import page_files_past

    past = page_files_past(directory, end)
    if past is None:
        return
    there, count, highest = past
    # (The files past it need not follow one another: their count and the last, not a range.)
    left_out = (
        f"the page file past it, {highest}, is"
        if count == 1
        else f"the {count} page files past it, up to {highest}, are"
    )
    sys.stderr.write(
        f"tse index: warning: page file {end} {'cannot be opened' if there else 'is missing'}: {left_out} "
        "not indexed (the index stops at the first missing page; to remove a page, keep its file and "
        f"list its docID in {os.path.join(directory, '.tse-gone')})\n"
    )


# PDFs without text named one a line, at most this many; the rest counted.
SHOWN_PDF_WARNINGS = 10


@contextmanager
def _pdf_warnings_shown(warnings: list[tuple[int, str, str]]) -> Iterator[None]:
    """On the way out, one line per PDF that gave no text or only part of it (the first few), and
    their counts."""
    from .index.pagecontent import PART_INDEXED

    try:
        yield
    finally:
        for doc_id, url, why in warnings[:SHOWN_PDF_WARNINGS]:
            said = f"was read in part: {why.removesuffix(PART_INDEXED)}" if why.endswith(PART_INDEXED) else None
            said = said or f"gave no text: {why}"
            sys.stderr.write(f"tse index: warning: {shown_message(f'PDF {doc_id} ({url}) {said}')}\n")
        in_part = sum(why.endswith(PART_INDEXED) for _, _, why in warnings)
        if len(warnings) > in_part:
            sys.stderr.write(f"tse index: {len(warnings) - in_part} PDF(s) indexed without text\n")
        if in_part:
            sys.stderr.write(f"tse index: {in_part} PDF(s) indexed in part\n")


# A directory with fewer pages is indexed in about a second: no bar.
INDEX_BAR_PAGES = 500


def _index_progress_bar(directory: str) -> ContextManager:
    """A progress bar for indexing *directory*, on a terminal, when it holds many pages (else None)."""
    from .rules.files.pagedir import is_page_name
    from .terminal import is_terminal, progress_bar

    if not is_terminal(sys.stderr):
        return nullcontext()  # the directory is not even listed
    total = sum(1 for name in os.listdir(directory) if is_page_name(name))
    return progress_bar(total, "indexing", minimum=INDEX_BAR_PAGES) or nullcontext()


def indextest(options: argparse.Namespace) -> int:
    from .index.indexlock import index_lock
    from .index.storage import read_index, write_index
    from .rules.files.indexfile import INDEX_FILE
    from .rules.files.outputfile import check_output_file

    with _one_line_errors("indextest", options.old):
        loaded = read_index(options.old)
    # What fails from here is NEWINDEX's (a full disk named OLDINDEX).
    with _one_line_errors("indextest", options.new):
        # Only an index, an empty file or nothing is replaced: not a device, nor a page directory's own
        # file (its .crawler, a .tse-charsets where a crawl makes a directory ...), nor any other file.
        check_output_file(options.new, INDEX_FILE)
        _require_writable(options.new)
        with index_lock(options.new, "tse indextest"):  # NEWINDEX is not written by two at once either
            write_index(options.new, loaded, sidecar=False)
    return OK


def query(options: argparse.Namespace) -> int:
    from .index.docstore import other_crawl
    from .index.indexer import check_page_directory
    from .index.querier import Querier, run
    from .index.storage import IndexReader

    if sys.stdout is None:  # closed (``>&-``): the answers could go nowhere
        return _one_line("query", "standard output is closed: the answers would be lost")
    _index_warnings_said_by("query")
    with _one_line_errors("query", options.indexfile):
        check_page_directory(options.pagedir, options.indexfile)
        # Another crawl's directory would answer with its URLs for the index's docIDs, in every ranking
        # (an index without a document store, the reference's, tells nothing: it is queried as before).
        if problem := other_crawl(options.indexfile, options.pagedir):
            raise _Failed(_one_line("query", problem))
        querier = Querier(options.pagedir, IndexReader(options.indexfile), options.rank)
        if options.rank == "bm25":
            querier.engine.docs  # noqa: B018 (opened now: a page it must read fails here, in one line)
        if options.rank == "relevance" and isinstance(problem := querier.engine.search_index, str):
            raise _Failed(_one_line("query", f"--rank relevance needs the search index: {problem}"))
    # Bytes that are no text in the locale's encoding are read as lone surrogates and written back as
    # the bytes they were, whatever the locale (Python decodes strictly but in the C, POSIX and C.UTF-8
    # locales): rank=tse answers them as bad characters, rank=relevance as no UTF-8, never a traceback.
    for stream in (sys.stdin, sys.stdout):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="surrogateescape")
    try:
        run(querier)
    except KeyboardInterrupt:
        sys.stdout.write("\n")
        return INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`tse query ... | head`): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE
    except OSError as error:  # a full disk (`> /dev/full`), an input or output that fails: one line
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (nothing left to flush at exit)
        return _one_line("query", error.strerror or str(error))
    return OK


def serve(options: argparse.Namespace) -> int:
    # Python's collector of cyclic garbage left off while the server imports its modules and opens the
    # index (its collections were 5 % of that), and what they made frozen before the workers are forked
    # (``serve_forever``): the workers' collections then neither walk it nor copy its pages.  The Python
    # docs' way for a server that forks (``gc.freeze``).
    gc.disable()
    try:
        return _serve(options)
    finally:
        gc.enable()


def _serve(options: argparse.Namespace) -> int:
    from .index.docstore import other_crawl
    from .index.engine import QueryEngine
    from .index.indexer import check_page_directory
    from .index.storage import IndexReader

    try:
        from .search.answercache import DEFAULT_BYTES, MAX_MEGABYTES, MEGABYTE
        from .search.protocol import REQUEST_HEAD_SECONDS
        from .search.served import check_interval
        from .search.server import listen, serve_forever
    except ImportError as error:
        return _one_line("serve", f"needs the search extra (pip install tse-scrapy[search]): {error}", USAGE)
    _index_warnings_said_by("serve")
    # Everything is checked and loaded before the server answers anything.
    if options.workers is not None and not 1 <= options.workers <= 64:
        return _one_line("serve", f"--workers must be from 1 to 64: {options.workers}", USAGE)
    head_seconds = REQUEST_HEAD_SECONDS if options.head_timeout is None else options.head_timeout
    if not 1 <= head_seconds <= 3600:  # (nan and inf too)
        return _one_line("serve", f"--head-timeout must be from 1 to 3600 seconds: {head_seconds!r}", USAGE)
    answer_megabytes = DEFAULT_BYTES / MEGABYTE if options.answer_cache is None else options.answer_cache
    if not 0 <= answer_megabytes <= MAX_MEGABYTES:  # (nan and inf too)
        return _one_line("serve", f"--answer-cache must be from 0 to {MAX_MEGABYTES} MB: {answer_megabytes!r}", USAGE)
    try:
        check_interval()
    except ValueError as error:
        return _one_line("serve", str(error), USAGE)
    with _one_line_errors("serve", options.indexfile, USAGE):
        check_page_directory(options.pagedir, options.indexfile)
        if problem := other_crawl(options.indexfile, options.pagedir):
            return _one_line("serve", problem, USAGE)
        engine = QueryEngine(options.pagedir, IndexReader(options.indexfile))
    try:
        sock = listen(options.host, options.port)
    except OSError as error:
        return _one_line("serve", f"cannot listen on {options.host}:{options.port}: {error.strerror}", USAGE)
    # The document store opened, or built from the pages (a while without one), once the port is the
    # server's: a port taken is said at once.
    try:
        with _one_line_errors("serve", options.indexfile, USAGE):
            engine.docs  # noqa: B018
    except BaseException:
        sock.close()
        raise
    host, port = sock.getsockname()[:2]
    host = f"[{host}]" if ":" in host else host
    # Each worker opens the index and its document store itself: without a store to open, one process.
    workers = options.workers or min(len(os.sched_getaffinity(0)), 4)
    if workers > 1 and not engine.docs.from_file:
        sys.stderr.write(f"tse serve: one process, not {workers}: run tse index to store titles and snippets\n")
        workers = 1
    # Opened here as each worker opens it: what would make every search rank=tse, said once.
    if isinstance(problem := engine.search_index, str):
        sys.stderr.write(
            f"tse serve: the search index cannot be used, so results use rank=tse: {shown_message(problem)}\n"
        )
    sys.stderr.write(f"tse serve: searching {options.pagedir} on http://{host}:{port}/ (Ctrl-C to stop)\n")
    if workers > 1:  # (one process built its store from the pages: its garbage is left to be collected)
        gc.freeze()
    gc.enable()
    if not serve_forever(engine, sock, workers, head_seconds, int(answer_megabytes * MEGABYTE)):
        return _one_line("serve", "a worker process could not start (see above)")
    return OK


def report(options: argparse.Namespace) -> int:
    try:
        from .report.page import OverwritesRecord, write_report
        from .report.records import NotARegularFile, ReportError
    except ImportError as error:
        return _one_line("report", f"needs the report extra (pip install tse-scrapy[report]): {error}", USAGE)
    from .rules.files.outputfile import OutputFileRefused

    out = options.out
    try:
        _require_writable(out)
    except Refused as error:  # a directory, in no directory, not writable: refused as every --out is, exit 2
        return _one_line("report", f"--out {error}", USAGE)
    try:
        summary = write_report(options.records, out)
    except OverwritesRecord:
        return _one_line("report", f"--out {out} is one of the records: choose another file", USAGE)
    except OutputFileRefused as error:  # not a report, nor an empty file: a device, a page file, a record ...
        return _one_line("report", f"--out {error}", USAGE)
    except NotARegularFile as error:  # a RECORD that is a device or a FIFO: /dev/zero was read for ever
        return _one_line("report", str(error), USAGE)
    except ReportError as error:
        return _one_line("report", str(error))
    return _one_line("report", summary.describe(), OK)


def import_command(options: argparse.Namespace) -> int:
    from .webarchive.importer import ImportRefused, import_archives

    def warn(message: str) -> None:
        sys.stderr.write(f"tse import: {shown_message(message)}\n")

    try:
        if options.record is not None:
            _require_writable(options.record)
        summary = import_archives(options.archives, options.pagedir, pdf=options.pdf, record=options.record, warn=warn)
    except (ImportRefused, Refused) as error:
        return _one_line("import", str(error), USAGE)
    except OSError as error:
        return _one_line("import", f"{error.filename or options.pagedir}: {error.strerror or error}")
    return _one_line("import", summary.describe(), FAILED if summary.failed else OK)


def status(options: argparse.Namespace) -> int:
    from .rules.crawling.crawlargs import ArgumentError, check_crawl_name

    try:
        import redis  # noqa: F401 (the extra's: said in one line when missing)
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        from .distributed.store import RedisCrawl, connect, redis_url
    except ImportError as error:
        return _one_line("status", f"needs the redis extra (pip install tse-scrapy[redis]): {error}", USAGE)
    if options.name is None and options.redis != "env" and "://" not in options.redis:
        options.name, options.redis = options.redis, "env"  # `tse status --redis NAME`: the URL from TSE_REDIS_URL
    if options.name is None:
        return _one_line("status", "the following arguments are required: NAME", USAGE)
    # Refused as `tse crawl` refuses them (one rule: check_crawl_name): no crawl has such a name, and the keys
    # tse:NAME:* of `polite`, or of a name with '*' or '?', are other crawls' (every crawl's politeness
    # leases, every crawl's keys), which "its record is lost ... DEL each" told to remove.
    try:
        check_crawl_name(options.name)
    except ArgumentError as error:
        return _one_line("status", str(error), USAGE)
    try:
        server = connect(options.redis, check=False)
        # The first question asked once: a server that does not answer it (a TLS handshake with a plain
        # port, rediss:// for redis://) is said so after one timeout, not four (41 s), as a worker says it.
        patient = server.get_retry()
        server.set_retry(Retry(NoBackoff(), 0))
        crawl = RedisCrawl(server, options.name)
    except ArgumentError as error:
        return _one_line("status", str(error), USAGE)
    except (TypeError, ValueError) as error:  # a URL option redis-py does not take (?ssl_cert_reqs=bogus)
        return _one_line("status", f"the Redis URL is not one redis-py reads: {error}", USAGE)
    shown_url = mask_secrets(redis_url(options.redis))

    try:
        return _statuses(options, crawl, shown_url, patient)
    except BrokenPipeError:
        # The reader went away (`tse status ... | head -1`): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE
    except (TypeError, ValueError) as error:  # a URL option redis-py takes only when it connects
        return _one_line("status", f"the Redis URL is not one redis-py reads: {error}", USAGE)


def _statuses(options: argparse.Namespace, crawl: RedisCrawl, shown_url: str, patient: Retry | None = None) -> int:
    """``tse status``'s lines: once, or every ``--every`` seconds until the crawl is over or interrupted.
    Redis's first answer given, its commands are retried as *patient* says."""
    import time

    import redis

    from .distributed.store import is_outage, outage_line, redis_url, tls_hint

    # The crawl as last seen, and the Redis that held it: a watcher tells a crawl that finished (its
    # last worker removes its keys) from one never there, or lost by a Redis restarted without them.
    seen: dict | None = None
    run_id: str | None = None
    # None: once.  (0 was taken for once too, while the doc said it repeats.)
    every = None if options.every is None else max(options.every, MIN_INTERVAL)
    try:
        while True:
            try:
                shown = crawl.status()
                # (Its record another version's, or no crawl's: its counts would be shown as if they meant
                # what they mean here.)
                problem = crawl.parameters_problem() if shown["exists"] else None
                if shown["exists"] and seen is None:
                    run_id = crawl.server_run_id()
                ended = seen is not None and not shown["exists"] and not shown["quarantined"]
                restarted = ended and run_id is not None and crawl.server_run_id() != run_id
            except redis.RedisError as error:
                if not is_outage(error):
                    return _one_line("status", _refusal(error, shown_url))
                if every is None:  # once: no wait, exit 1
                    return _one_line(
                        "status", outage_line(error, shown_url) + tls_hint(error, redis_url(options.redis))
                    )
                hint = tls_hint(error, redis_url(options.redis))
                print(
                    f"crawl {options.name}: {outage_line(error, shown_url)}{hint}; asking again in {every:g} s",
                    flush=True,
                )
                time.sleep(every)
                continue
            if patient is not None:
                crawl.server.set_retry(patient)  # answered: from now on, a dropped connection is asked again
                patient = None
            if problem is not None:
                return _one_line("status", f"crawl {options.name} in Redis at {shown_url}: {problem}")
            if not shown["exists"] and not shown["quarantined"]:
                if leftovers := crawl.leftover_keys():  # (a Redis without persistence restarted mid-crawl)
                    return _one_line(
                        "status",
                        f"crawl {options.name} in Redis at {shown_url}: its record is lost, {len(leftovers)} "
                        f"leftover key(s) remain: remove them (redis-cli --scan --pattern 'tse:{options.name}:*', "
                        "then DEL each)",
                    )
                if seen is None:
                    return _one_line("status", f"no crawl named {options.name} in Redis at {shown_url}")
                if restarted:
                    return _one_line(
                        "status",
                        f"crawl {options.name} in Redis at {shown_url}: Redis restarted and holds the crawl "
                        "no more (it kept no persistence): its record is lost",
                    )
                print(
                    f"crawl {options.name}: finished (its last worker removed its keys); last seen: "
                    f"saved {seen['saved']}, seen {seen['seen']}",
                    flush=True,
                )
                return OK
            state = ""
            if shown["finishing"]:
                kept = "finished (kept with --keep)"
                state = kept if shown["kept"] else "finishing (its last worker is removing its keys)"
                state += ": "
            line = (
                f"crawl {options.name}: {state}saved {shown['saved']}, frontier {shown['frontier']}, "
                f"leased {shown['leased']}, seen {shown['seen']}, workers {shown['workers']}"
            )
            if not shown["exists"]:
                line = f"crawl {options.name}: over (its keys are removed)"
            if shown["quarantined"]:
                line += f", quarantined {shown['quarantined']} ({crawl.keys.quarantine})"
            print(line, flush=True)
            for record in shown["quarantine"] if every is None else ():
                print(f"  quarantined: {record}", flush=True)
            over = not shown["exists"] or (shown["finishing"] and shown["kept"])
            if every is None or over:
                return OK
            seen = shown
            time.sleep(every)
    except KeyboardInterrupt:
        return OK


def _refusal(error: Exception, shown_url: str) -> str:
    """What Redis refused, in words: a password missing, or wrong, said so (its own "HELLO must be
    called with the client already authenticated ..." or "invalid username-password pair" says it
    less plainly)."""
    from .distributed.store import certificate_line, login_refusal

    return (
        login_refusal(error, shown_url)
        or certificate_line(error, shown_url)
        or f"Redis at {shown_url} refused: {error}"
    )


def _show_shutdown(record: logging.LogRecord) -> bool:
    """Scrapy says at INFO that Ctrl-C was received: shown on a quiet terminal too."""
    if record.levelno == logging.INFO and str(record.msg).startswith("Received %(signame)s"):
        record.levelno, record.levelname = logging.WARNING, "WARNING"
    return True


def crawl(options: argparse.Namespace) -> int:
    from .crawlstart import prepare_crawl
    from .rules.crawling.crawlargs import ArgumentError

    spider_args = dict(
        seed=options.seed,
        pagedir=options.pagedir,
        depth=options.depth,
        order=options.order,
        links=options.links,
        prefix=options.prefix,
        allow=options.allow,
        deny=options.deny,
        deny_ext=options.deny_ext,
        pdf="yes" if options.pdf else None,
        sitemaps="yes" if options.sitemaps else None,
        render="yes" if options.render else None,
    )
    spider_args["resume"] = "yes" if options.resume else None
    spider_args["update"] = "yes" if options.update else None
    given = dict(options.settings)  # checked with the arguments (prepare_crawl: their values, the page limit)
    if options.render:
        from .crawl.downloader.render import renderer_missing

        problem = renderer_missing(given.get("TSE_CHROMIUM"))
        if problem:
            return _one_line("crawl", problem, USAGE)
    for name, value in (
        ("TSE_REDIS_URL", options.redis),
        ("TSE_CRAWL_NAME", options.name),
        ("TSE_REDIS_KEEP", options.keep or None),
        ("TSE_REDIS_PATIENCE", options.redis_patience),
        ("TSE_IGNORE_ROBOTS_META", options.ignore_robots_meta or None),
        ("TSE_REDIS_MIGRATE", options.migrate or None),
        ("CLOSESPIDER_PAGECOUNT", options.max_pages),
        ("TSE_VALIDATORS", options.validators or None),
        ("TSE_CHANGES", options.changes),
        ("TSE_WARC", options.warc),
        ("TSE_RECORD", options.record),
        ("TSE_PROGRESS", None if options.progress else False),
        ("LOG_FILE", options.log_file),
    ):
        if value is not None:
            given[name] = value
    try:
        start = prepare_crawl(spider_args, given.get, given=given)
    except ArgumentError as error:
        return _one_line("crawl", str(error), USAGE)
    if start.nothing_to_do:
        return _one_line("crawl", start.nothing_to_do, OK)
    # Scrapy is imported only once the arguments are known to be good.
    from scrapy.crawler import AsyncCrawlerProcess
    from scrapy.utils.project import get_project_settings

    from .crawl.outcome import interrupts_ignored_from_now as crawl_over
    from .crawl.outcome import report as crawl_outcome
    from .crawl.outcome import say_start_failure, summary_line
    from .crawl.progresslog import flush_stdout
    from .crawl.seeds import failed_page_lines
    from .spiders.tse import TseSpider

    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "tse_scrapy.settings")
    settings = get_project_settings()
    # A quiet terminal: Scrapy's log from WARNING (-v INFO, -vv DEBUG; a log file from INFO).
    level = ("INFO" if options.log_file else "WARNING", "INFO", "DEBUG")[min(options.verbose, 2)]
    settings.set("LOG_LEVEL", level, priority="cmdline")
    settings.setdict(given, priority="cmdline")
    process = AsyncCrawlerProcess(settings)
    logging.getLogger("scrapy.crawler").addFilter(_show_shutdown)
    crawler = process.create_crawler(TseSpider)
    started = process.crawl(crawler, tse_start=start, **{k: v for k, v in spider_args.items() if v is not None})
    say_start_failure("tse crawl", started, crawler)
    process.start()
    crawl_over()  # the outcome is the exit status, whatever signal comes now
    if process.bootstrap_failed:
        return FAILED
    if crawler.stats.get_value("finish_reason") is not None:
        stats = crawler.stats.get_stats()
        for line in failed_page_lines(stats):  # (the progress log's Failed lines say no reason)
            sys.stderr.write(f"tse crawl: {shown_message(line)}\n")
        sys.stderr.write(f"tse crawl: {summary_line(stats, update=options.update)}\n")
    status = crawl_outcome("tse crawl", crawler)
    # The progress log's last lines, held in stdout's buffer when it is a pipe: its reader gone
    # (`| head`), 141 as for tse query, not Python's "Exception ignored" and 120 at exit.
    return BROKEN_PIPE if not flush_stdout() and status == OK else status


if __name__ == "__main__":
    sys.exit(main())
