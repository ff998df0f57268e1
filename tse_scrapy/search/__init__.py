"""Search in a browser (``tse serve``): a search page, a JSON API and the saved pages.

Built on the shared query engine (``index.engine``); never imports Scrapy.
"""
