"""tse-scrapy: the Tiny Search Engine on Scrapy."""

__version__ = "0.1.0"

# The compiled copies of a search's modules, used while current (compiled.py); before any of them is imported.
from . import compiled as _compiled

_compiled.install()
