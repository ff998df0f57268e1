"""tse-scrapy: the Tiny Search Engine on Scrapy."""

__version__ = "0.1.0"
