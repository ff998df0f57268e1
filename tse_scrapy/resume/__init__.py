"""Crash-safe crawls: the durable crawl state, and continuing a crawl from it (``--resume``)."""
