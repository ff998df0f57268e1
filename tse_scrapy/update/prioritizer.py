"""ChangeRatePrioritizer: in an update, the pages most likely to have changed first.

Set ``TSE_PRIORITIZER=tse_scrapy.update.prioritizer.ChangeRatePrioritizer``
with ``--order priority --update``: every live page is queued at once and
scored by the probability that it has changed since its last visit
(``rules.crawling.changes.change_probability``, from the history the catalog keeps);
a page with no history scores ``PRIOR``.  With ``--sitemaps``, a page whose
sitemap ``lastmod`` is after its last download scores 1, one whose lastmod is
not scores 0 (``rules.crawling.changes.sitemap_change``).  So ``--update --max-pages N``
spends its N requests where change is.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from scrapy import Request

from ..rules.crawling.changes import PRIOR, change_probability, sitemap_change
from .extension import update_session, warc_date

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from .extension import UpdateExtension


class ChangeRatePrioritizer:
    """Scores a queued URL by how likely it is to have changed (in-links break no ties: depth does)."""

    def __init__(self, update: UpdateExtension | None, now: float | None = None):
        self.update = update
        self.now = time.time() if now is None else now

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ChangeRatePrioritizer:
        return cls(update_session(crawler))

    def score(self, request: Request, inlinks: int) -> float:
        page = self.update.known_page(request.url) if self.update else None
        if page is None:
            return PRIOR
        lastmod = request.meta.get("tse_lastmod") or self.update.lastmods.get(page.url)
        # The later of its last download and its last visit (a 304 keeps the download's date).
        seen = max(page.fetched or "", warc_date(page.last_visit))
        said = sitemap_change(lastmod, seen)
        if said is not None:
            return said
        observed = page.visits - 1
        interval = (page.last_visit - page.first_seen) / observed if observed > 0 else 0.0
        return change_probability(page.visits, page.changes, self.now - page.last_visit, interval)
