"""The crawl's downloader middlewares (``DOWNLOADER_MIDDLEWARES`` in ``settings.py``)."""
