"""The crawl's extensions (``EXTENSIONS``), its stats collector and its log formatter."""
