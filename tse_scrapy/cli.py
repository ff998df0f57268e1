"""The ``tse`` command: the TSE programs with the reference argument order."""

from __future__ import annotations

import argparse
import os
import sys

from .crawlargs import ArgumentError, check_crawl_args, check_resume


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line, no usage dump: the reference printed a single message.
        self.exit(2, f"{self.prog}: {message}\n")


def _setting(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE: {text}")
    return name, value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tse", description="The Tiny Search Engine on Scrapy.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    crawl = commands.add_parser(
        "crawl", help="crawl from SEED into PAGEDIR down to MAXDEPTH",
        description="Crawl internal pages from SEED into PAGEDIR (which must exist), "
                    "at most MAXDEPTH (0-10) links away. Progress goes to stdout, "
                    "Scrapy's log to stderr.")
    crawl.add_argument("seed", metavar="SEED")
    crawl.add_argument("pagedir", metavar="PAGEDIR")
    crawl.add_argument("depth", metavar="MAXDEPTH")
    crawl.add_argument("--order", default="tse",
                       help="tse (reference stack order, default), bfs, or priority (most linked-to first)")
    crawl.add_argument("--links", default="html",
                       help="html (standards-based, default) or tse (the reference scanner)")
    crawl.add_argument("--prefix", help="internal URL prefix(es), comma-separated "
                                        "(default http://cs50tse.cs.dartmouth.edu/tse/)")
    crawl.add_argument("--allow", help="only URLs matching one of these regular expressions (comma-separated)")
    crawl.add_argument("--deny", help="no URL matching any of these regular expressions (comma-separated)")
    crawl.add_argument("--deny-ext", dest="deny_ext",
                       help="instead of the TSE rule (.htm* pages only), refuse these extensions "
                            "(comma-separated; 'scrapy' for Scrapy's list)")
    crawl.add_argument("--max-pages", dest="max_pages", type=int, metavar="N",
                       help="stop after exactly N saved pages")
    crawl.add_argument("--resume", action="store_true",
                       help="continue the interrupted crawl whose pages are in PAGEDIR")
    crawl.add_argument("-s", dest="settings", action="append", type=_setting, default=[],
                       metavar="NAME=VALUE", help="set a Scrapy setting (may be repeated)")
    index = commands.add_parser(
        "index", help="index the pages of PAGEDIR into INDEXFILE",
        description="Write the inverted index of PAGEDIR to INDEXFILE (sorted text, "
                    "plus INDEXFILE.bin for a fast querier start).")
    index.add_argument("pagedir", metavar="PAGEDIR")
    index.add_argument("indexfile", metavar="INDEXFILE")
    indextest = commands.add_parser(
        "indextest", help="load OLDINDEX and write it back to NEWINDEX",
        description="Load OLDINDEX and write the same (word, docID, count) triples to NEWINDEX.")
    indextest.add_argument("old", metavar="OLDINDEX")
    indextest.add_argument("new", metavar="NEWINDEX")
    query = commands.add_parser(
        "query", help="answer queries from stdin with PAGEDIR and INDEXFILE",
        description="Read queries from stdin, one a line, until end of input: words, "
                    "'and' (also implied between words) and 'or'; 'and' binds tighter.")
    query.add_argument("pagedir", metavar="PAGEDIR")
    query.add_argument("indexfile", metavar="INDEXFILE")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    options = parser.parse_args(argv)
    if options.command is None:
        parser.print_help(sys.stderr)
        return 2
    handler = {"crawl": crawl, "index": index, "indextest": indextest, "query": query}[options.command]
    try:
        return handler(options)
    except KeyboardInterrupt:
        # Before Scrapy has installed its own Ctrl-C handling.
        sys.stderr.write(f"tse {options.command}: interrupted\n")
        return 130


def _fail(command: str, message: str) -> int:
    sys.stderr.write(f"tse {command}: {message}\n")
    return 1


def _check_writable(path: str) -> str | None:
    """Why *path* cannot be written as a new file, or None."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        return f"{path} is a directory"
    if not os.path.isdir(directory):
        return f"cannot write {path}: no directory {directory}"
    if not os.access(directory, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        return f"cannot write {path}: permission denied"
    return None


def index(options) -> int:
    from .indexer import PageDirError, build_index, check_page_directory
    from .indexfile import write_index

    try:
        check_page_directory(options.pagedir)
        problem = _check_writable(options.indexfile)
        if problem:
            return _fail("index", problem)
        write_index(options.indexfile, build_index(options.pagedir))
    except PageDirError as error:
        return _fail("index", str(error))
    except OSError as error:
        return _fail("index", f"{error.filename or options.indexfile}: {error.strerror}")
    return 0


def indextest(options) -> int:
    from .indexfile import IndexFileError, read_index, write_index

    try:
        loaded = read_index(options.old)
        problem = _check_writable(options.new)
        if problem:
            return _fail("indextest", problem)
        write_index(options.new, loaded, sidecar=False)
    except IndexFileError as error:
        return _fail("indextest", str(error))
    except OSError as error:
        return _fail("indextest", f"{error.filename or options.old}: {error.strerror}")
    return 0


def query(options) -> int:
    from .indexer import PageDirError, check_page_directory
    from .indexfile import IndexFileError, IndexReader
    from .querier import Querier, run

    try:
        check_page_directory(options.pagedir)
        reader = IndexReader(options.indexfile)
    except (PageDirError, IndexFileError) as error:
        return _fail("query", str(error))
    except OSError as error:
        return _fail("query", f"{error.filename or options.indexfile}: {error.strerror}")
    try:
        run(Querier(options.pagedir, reader))
    except KeyboardInterrupt:
        sys.stdout.write("\n")
        return 130
    except BrokenPipeError:
        # The reader went away (`tse query ... | head`): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return 0


def crawl(options) -> int:
    spider_args = dict(seed=options.seed, pagedir=options.pagedir, depth=options.depth,
                       order=options.order, links=options.links, prefix=options.prefix,
                       allow=options.allow, deny=options.deny, deny_ext=options.deny_ext)
    try:
        checked = check_crawl_args(**spider_args)
        check_resume(checked, options.resume, dict(options.settings).get("JOBDIR"))
    except ArgumentError as error:
        sys.stderr.write(f"tse crawl: {error}\n")
        return 2
    spider_args["resume"] = "yes" if options.resume else None
    # Scrapy is imported only once the arguments are known to be good.
    from scrapy.crawler import AsyncCrawlerProcess
    from scrapy.utils.project import get_project_settings

    from .runner import report
    from .spiders.tse import TseSpider

    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "tse_scrapy.settings")
    settings = get_project_settings()
    settings.setdict(dict(options.settings), priority="cmdline")
    if options.max_pages:
        settings.set("CLOSESPIDER_PAGECOUNT", options.max_pages, priority="cmdline")
    process = AsyncCrawlerProcess(settings)
    crawler = process.create_crawler(TseSpider)
    process.crawl(crawler, **{k: v for k, v in spider_args.items() if v is not None})
    process.start()
    if process.bootstrap_failed:
        return 1
    return report("tse crawl", crawler)


if __name__ == "__main__":
    sys.exit(main())
