"""Signals of tse-scrapy's own components."""

# Sent with ``request=`` when a page's handling is over without an item
# (failed fetch, non-200 answer), so the scheduler can hand out the next one;
# ``checked=True`` when `scrapy check` discarded a page's item (no failure).
page_done = object()

# Sent with ``token=`` (the page's ``tse_token``) when a page's docID is taken,
# and recorded in the crawl state, just before its file is written: every link
# of the page is queued by then, so the scheduler hands out the next page while
# a thread writes the file.
page_writing = object()
