"""UrlFilter: the user's allow/deny rules, applied after the internal-prefix test.

``allow`` and ``deny`` are regular expressions searched in the normalized URL
(as Scrapy's LinkExtractor does): a URL must match one ``allow`` (when any is
given) and no ``deny``.  ``deny_ext`` replaces the TSE extension rule (only
``.htm*`` pages) by "anything but these extensions"; ``deny_ext=scrapy`` is
Scrapy's own list of non-page extensions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from scrapy.linkextractors import IGNORED_EXTENSIONS
from scrapy.settings import BaseSettings
from scrapy.utils.url import url_has_any_extension

from ..rules.crawling.crawlargs import extension_rule, split_list


class UrlFilter:
    """The allow, deny and deny_ext rules of one crawl."""

    def __init__(
        self, allow: Iterable[str] = (), deny: Iterable[str] = (), deny_ext: str | None = None, pdf: bool = False
    ):
        self.extension_rule = extension_rule(deny_ext, pdf)
        self.allow = [re.compile(pattern) for pattern in split_list(allow)]
        self.deny = [re.compile(pattern) for pattern in split_list(deny)]
        extensions = split_list(deny_ext)
        if extensions == ["scrapy"]:
            extensions = IGNORED_EXTENSIONS
        self.deny_ext = {"." + ext.lower().lstrip(".") for ext in extensions} if deny_ext is not None else None

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> UrlFilter:
        return cls(
            settings.getlist("TSE_ALLOW"),
            settings.getlist("TSE_DENY"),
            settings.get("TSE_DENY_EXT"),
            settings.getbool("TSE_PDF"),
        )

    @property
    def tse_extensions(self) -> bool | frozenset[str]:
        """The TSE extension rule (part of normalization) as ``normalize_url`` takes it:
        False when ``deny_ext`` replaces it, the extensions it also takes with ``--pdf``."""
        return self.extension_rule

    def allows(self, normalized_url: str) -> bool:
        if self.deny_ext and url_has_any_extension(normalized_url, self.deny_ext):
            return False
        if self.allow and not any(pattern.search(normalized_url) for pattern in self.allow):
            return False
        return not any(pattern.search(normalized_url) for pattern in self.deny)
