"""The crawl's downloader middlewares (``DOWNLOADER_MIDDLEWARES`` in ``settings.py``), and its HTTP download
handler (``handler``: ``DOWNLOAD_HANDLERS``)."""
