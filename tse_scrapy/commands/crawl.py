"""``scrapy crawl``, with the tse spider's arguments checked before Scrapy starts
and a failed crawl turned into a non-zero exit status."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from ..crawl.outcome import interrupts_ignored_from_now, report, say_start_failure
from ..crawl.progresslog import flush_stdout
from ..crawlstart import CrawlStart, prepare_crawl
from ..exitcodes import BROKEN_PIPE, FAILED, OK, USAGE
from ..rules.crawling.crawlargs import ArgumentError
from ..spiders.tse import TseSpider


def _append_to_log(log_file: str | None, level: str, message: str) -> None:
    """Under scrapyd the job's log file is all a user sees: the message goes there too."""
    if not log_file:
        return
    try:
        with open(log_file, "a", encoding="utf-8") as log:
            log.write(f"{datetime.now():%Y-%m-%d %H:%M:%S} [tse] {level}: {message}\n")
    except OSError:
        pass


class Command(ScrapyCrawlCommand):
    """Scrapy's crawl command; for the tse spider, refusals and failures are one line and an exit status."""

    start: CrawlStart | None = None  # how the tse spider's crawl starts, decided before Scrapy starts

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        if args[:1] != [TseSpider.name]:
            self._check_spider_name(args)
            return
        program = f"scrapy crawl {TseSpider.name}"
        try:
            if len(args) > 1:
                raise ArgumentError(
                    f"unexpected argument(s): {' '.join(args[1:])} (spider arguments go with -a NAME=VALUE)"
                )
            given = [setting.split("=", 1)[0] for setting in opts.set]  # (-s NAME=VALUE, as Scrapy took them)
            start = prepare_crawl(opts.spargs, self.settings.get, program, given)
        except ArgumentError as error:
            self._leave(USAGE, "CRITICAL", f"{program}: {error}")
        if start.nothing_to_do:
            self._leave(OK, "INFO", f"{program}: {start.nothing_to_do}")
        self.start = start

    def _check_spider_name(self, args: list[str]) -> None:
        """Leave in one line, exit 2, when *args* name a spider there is none of: Scrapy said so in a
        37-line traceback ("KeyError: 'Spider not found: tsee'"), after its start-up log."""
        if len(args) != 1:
            return  # (Scrapy's usage error)
        from scrapy.spiderloader import get_spider_loader

        spiders = get_spider_loader(self.settings).list()
        if args[0] not in spiders:
            names = ", ".join(sorted(spiders))
            self._leave(USAGE, "CRITICAL", f"scrapy crawl: no spider named {args[0]!r} (the spiders: {names})")

    def _leave(self, status: int, level: str, message: str) -> None:
        sys.stderr.write(message + "\n")
        _append_to_log(self.settings.get("LOG_FILE"), level, message)
        sys.exit(status)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            super().run(args, opts)
            return
        crawler = self._create_crawler(args[0])
        decided = {"tse_start": self.start} if self.start is not None else {}
        started = self.crawler_process.crawl(crawler, **{**opts.spargs, **decided})  # a -a tse_start=... does not count
        say_start_failure(f"scrapy crawl {args[0]}", started, crawler)
        self.crawler_process.start()
        interrupts_ignored_from_now()  # the outcome is the exit status, whatever signal comes now
        if self.crawler_process.bootstrap_failed:
            self.exitcode = FAILED
        elif crawler.stats.get_value("finish_reason") is not None or crawler.stats.get_value("start_time"):
            # (A crawl that started and has no finish reason was stopped at once by a second Ctrl-C, or
            # by a first as Scrapy started: it exited 0, saying nothing.)
            self.exitcode = report(f"scrapy crawl {args[0]}", crawler)
            if not flush_stdout() and self.exitcode == OK:  # (its reader gone: see tse crawl's)
                self.exitcode = BROKEN_PIPE
