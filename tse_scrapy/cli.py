"""The ``tse`` command: the TSE programs with the reference argument order."""

from __future__ import annotations

import argparse
import os
import sys

from .crawlargs import ArgumentError, check_crawl_args


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
    crawl.add_argument("--order", default="tse", help="tse (reference stack order, default) or bfs")
    crawl.add_argument("--links", default="html",
                       help="html (standards-based, default) or tse (the reference scanner)")
    crawl.add_argument("--prefix", help="internal URL prefix(es), comma-separated "
                                        "(default http://cs50tse.cs.dartmouth.edu/tse/)")
    crawl.add_argument("-s", dest="settings", action="append", type=_setting, default=[],
                       metavar="NAME=VALUE", help="set a Scrapy setting (may be repeated)")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    options = parser.parse_args(argv)
    if options.command is None:
        parser.print_help(sys.stderr)
        return 2
    return crawl(options)


def crawl(options) -> int:
    spider_args = dict(seed=options.seed, pagedir=options.pagedir, depth=options.depth,
                       order=options.order, links=options.links, prefix=options.prefix)
    try:
        check_crawl_args(**spider_args)
    except ArgumentError as error:
        sys.stderr.write(f"tse crawl: {error}\n")
        return 2
    # Scrapy is imported only once the arguments are known to be good.
    from scrapy.crawler import AsyncCrawlerProcess
    from scrapy.utils.project import get_project_settings

    from .runner import report
    from .spiders.tse import TseSpider

    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "tse_scrapy.settings")
    settings = get_project_settings()
    settings.setdict(dict(options.settings), priority="cmdline")
    process = AsyncCrawlerProcess(settings)
    crawler = process.create_crawler(TseSpider)
    process.crawl(crawler, **{k: v for k, v in spider_args.items() if v is not None})
    process.start()
    if process.bootstrap_failed:
        return 1
    return report("tse crawl", crawler)


if __name__ == "__main__":
    sys.exit(main())
