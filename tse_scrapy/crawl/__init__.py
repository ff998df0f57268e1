"""The crawler's Scrapy components for one process (SPEC 2); ``settings.py`` wires them.

- ``downloader``: the downloader middlewares, in the order a request meets them: the internal
  prefixes (``offsite``), ``robots``, conditional requests, ``render``, redirects, the proxy,
  cookies, the crawl record (``record``) and the WARC (``warc``); the HTTP download handler
  (``handler``: headers bounded).
- ``scheduling``: the scheduler and its frontiers, the dupefilter, and requests as data.
- ``extensions``: politeness, the status line (``progress``), the cycle collector's threshold,
  stats and log formatting.
- Here: the page item and the page-directory pipeline, the progress log, sitemaps, the user's
  URL filter, reading a WARC back (``warcindex``), signals, and a crawl's outcome.
"""
