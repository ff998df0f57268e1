"""The components a distributed worker uses instead of the single-process ones.

The spider calls ``use_distributed_components`` while the crawler's settings
can still change, so that none of these is even imported by a crawl of one
process.
"""

from __future__ import annotations

import logging

from scrapy.settings import Settings

from ..crawl.pipeline import PageDirPipeline
from ..rules.crawling.secrets import mask_secrets
from .extension import DistributedCrawlExtension
from .pipeline import SharedPageDirPipeline
from .politeness import RedisPolitenessMiddleware
from .store import worker_name


def use_distributed_components(settings: Settings, crawl_name: str) -> None:
    """Switch *settings* to the shared frontier, seen set, docIDs and politeness of crawl *crawl_name*."""
    for name, value in (
        ("TSE_CRAWL_NAME", crawl_name),
        ("TSE_WORKER", worker_name()),  # named in the crawl record
        ("SCHEDULER", "tse_scrapy.distributed.scheduler.RedisTseScheduler"),
        ("DUPEFILTER_CLASS", "tse_scrapy.distributed.dupefilter.RedisUrlDupeFilter"),
        ("TSE_STATE_ENABLED", False),  # Redis is the crawl's durable state
        # One politeness clock per host, in Redis: the worker's own delay is 0.
        ("TSE_HOST_DELAY", settings.getfloat("DOWNLOAD_DELAY")),
        ("DOWNLOAD_DELAY", 0),
    ):
        settings.set(name, value, priority="cmdline")
    # Built before the scheduler, dupefilter, pipeline and middleware that use it.
    settings.set_in_component_priority_dict("EXTENSIONS", DistributedCrawlExtension, 0)
    settings.replace_in_component_priority_dict("ITEM_PIPELINES", PageDirPipeline, SharedPageDirPipeline)
    # Last before the download handler: taking the lease is sending the request.
    settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", RedisPolitenessMiddleware, 950)
    # Scrapy logs the settings given (the Redis URL among them) at INFO.
    crawler_log = logging.getLogger("scrapy.crawler")
    if mask_logged_secrets not in crawler_log.filters:
        crawler_log.addFilter(mask_logged_secrets)


def mask_logged_secrets(record: logging.LogRecord) -> bool:
    """A log filter: the record's message with any URL's password masked."""
    message = record.getMessage()
    masked = mask_secrets(message)
    if masked != message:
        record.msg, record.args = masked, ()
    return True
