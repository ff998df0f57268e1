"""The TSE rules (SPEC 1-4) as pure functions: no Scrapy, no Redis, no network.

URLs (``urls``), links (``links``), the arguments of a crawl (``crawlargs``),
the progress log line (``progress``), page files (``pagedir``), words
(``words``), index files (``indexfile``) and queries (``query``).
"""
