"""The rules of the system as pure functions: no Scrapy, no Redis, no network, no database.

Split by role, each package depending only on those listed before it:

- ``web``: what the web gives: URLs (``urls``), links (``links``), robots directives
  (``robotsmeta``), sitemaps (``sitemaps``), canonical URLs and duplicates (``duplicates``).
- ``text``: a page's text: encodings (``encodings``), SPEC words (``words``), titles and visible
  text (``pagetext``), the search index's fields (``pagefields``), text analysis (``analysis``),
  a PDF's text as a page (``pdftext``).
- ``queries``: SPEC queries (``query``), BM25 (``ranking``), the search box's query language
  (``searchquery``), snippets (``searchsnippet``).
- ``files``: what is written and read back: page files (``pagedir``), the crawl's notes
  (``pagenotes``), index files (``indexfile``), crawl records (``crawlrecord``), frontier entries
  (``frontierentries``, ``legacyentries``), web archives' records as pages (``webarchive``).
- ``crawling``: a crawl's arguments (``crawlargs``), change rates (``changes``), progress
  (``progress``, ``eta``), units (``units``) and secrets in messages (``secrets``).
"""
