"""Before a crawl starts: check its arguments and decide how it starts.

Shared by ``tse crawl``, the project's ``scrapy crawl`` (both before Scrapy
starts, so a refusal is one line and nothing is written or fetched) and the
spider itself: a new crawl, a resumed one, a finished one (nothing to do), or
a distributed crawl, created or joined in Redis.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .resume.startmode import StartMode, start_mode
from .rules.crawlargs import ArgumentError, CrawlArgs, check_crawl_args, is_yes

Setting = Callable[[str], Any]  # reads one setting by name


@dataclass(frozen=True)
class CrawlStart:
    """How a crawl starts: its checked arguments, and its mode or its distributed crawl's name."""

    args: CrawlArgs
    mode: StartMode = StartMode.NEW
    distributed_name: str | None = None  # set for a worker of a distributed crawl

    @property
    def nothing_to_do(self) -> str | None:
        """Why the crawl has nothing to do (a message for the user), or None."""
        if self.mode is StartMode.FINISHED:
            return f"{self.args.pagedir} holds a finished crawl: nothing to resume"
        return None


def prepare_crawl(spider_args: dict[str, Any], setting: Setting) -> CrawlStart:
    """Check the spider's arguments and the settings; raise ArgumentError (one line) to refuse.

    With TSE_REDIS_URL, the distributed crawl is created in Redis (first
    worker) or joined (later ones).
    """
    redis_url = setting("TSE_REDIS_URL")
    if not redis_url:
        args = check_crawl_args(**spider_args)
        return CrawlStart(args, start_mode(args, is_yes(spider_args.get("resume")), setting("JOBDIR")))
    try:
        from .distributed.join import check_no_page_limit, create_or_join_crawl
    except ImportError as error:
        raise ArgumentError(
            f"a distributed crawl needs the redis extra (pip install tse-scrapy[redis]): {error}"
        ) from None
    check_no_page_limit(setting)
    crawl, args, _ = create_or_join_crawl(redis_url, setting("TSE_CRAWL_NAME"), spider_args)
    return CrawlStart(args, distributed_name=crawl.name)
