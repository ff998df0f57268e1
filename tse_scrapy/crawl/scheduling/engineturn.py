"""Asking Scrapy's engine for its next requests now, rather than when it next
looks (a response done with, its 5-second heartbeat): Scrapy has no public
call for it, so both go through the engine's slot.  No component of its own."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

REQUEST_SENT_TURNS = 2


def _engine_slot(crawler: Crawler | None) -> Any:
    """The engine's slot, or None (no crawl running: Scrapy raises RuntimeError before its engine exists)."""
    try:
        engine = crawler.engine if crawler is not None else None
    except RuntimeError:
        return None
    return getattr(engine, "_slot", None)


def wake_engine(crawler: Crawler | None) -> None:
    """Have the engine ask the scheduler for requests at its next turn."""
    slot = _engine_slot(crawler)
    if slot is not None:
        slot.nextcall.schedule()


async def engine_turn(crawler: Crawler) -> None:
    """Wake the engine and return once the requests it then takes from the
    scheduler are on their way (at once when it is closing, or when the
    downloader is full: it takes none)."""
    slot = _engine_slot(crawler)
    if slot is None or slot.closing is not None:
        return
    slot.nextcall.schedule()
    if crawler.engine.downloader.needs_backout():
        return  # every download slot is taken (order=bfs, 8 at a time): no request can go now
    # The slot stays open while a response's item is in the pipelines, so this
    # call cannot be cancelled under an item that awaits it.
    await slot.nextcall.wait()
    # Two more turns of the loop: Scrapy's downloader starts each download in a
    # task of its own, and the transport writes the request when the loop next
    # sees its socket writable. Fewer, and the caller's work comes first (an
    # order=tse crawl then pays for it and for the server's answer in turn).
    for _ in range(REQUEST_SENT_TURNS):
        await asyncio.sleep(0)
