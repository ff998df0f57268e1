"""One crawl shared by many workers through Redis, on scrapy-redis (extended, not replaced).

Imported only when a crawl is given TSE_REDIS_URL (``--redis``): a
single-process crawl never loads Redis.  ``keys`` names every Redis key,
``store`` and ``join`` hold the crawl's record (no Scrapy import), and the
rest are the Scrapy components a worker uses instead of the single-process
ones (``wiring``).
"""
