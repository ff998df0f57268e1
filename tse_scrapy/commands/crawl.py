"""``scrapy crawl``, with the tse spider's arguments checked before Scrapy starts
and a failed crawl turned into a non-zero exit status."""

from __future__ import annotations

import sys
from datetime import datetime

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from ..crawlargs import ArgumentError, check_crawl_start
from ..runner import report
from ..spiders.tse import TseSpider


def _append_to_log(log_file, message: str) -> None:
    """Under scrapyd the job's log file is all a user sees: the refusal goes there too."""
    if not log_file:
        return
    try:
        with open(log_file, "a", encoding="utf-8") as log:
            log.write(f"{datetime.now():%Y-%m-%d %H:%M:%S} [tse] CRITICAL: {message}\n")
    except OSError:
        pass


class Command(ScrapyCrawlCommand):
    def process_options(self, args, opts):
        super().process_options(args, opts)
        if args[:1] != [TseSpider.name]:
            return
        try:
            if len(args) > 1:
                raise ArgumentError(f"unexpected argument(s): {' '.join(args[1:])} (spider arguments go with -a NAME=VALUE)")
            check_crawl_start(opts.spargs, self.settings.get)
        except ArgumentError as error:
            message = f"scrapy crawl tse: {error}"
            sys.stderr.write(message + "\n")
            _append_to_log(self.settings.get("LOG_FILE"), message)
            sys.exit(2)

    def run(self, args, opts):
        if len(args) != 1:
            super().run(args, opts)
            return
        crawler = self._create_crawler(args[0])
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed:
            self.exitcode = 1
        elif crawler.stats.get_value("finish_reason") is not None:
            self.exitcode = report(f"scrapy crawl {args[0]}", crawler)
