"""Signals of tse-scrapy's own components."""

# Sent with ``request=`` when a page's handling is over without an item
# (failed fetch, non-200 answer), so the scheduler can hand out the next one.
page_done = object()
