"""A small site that changes between crawls, for the tests of re-crawling and freshness.

``ChangingSite.build(root)`` writes 17 HTML pages into *root* (flat, relative links) and each
mutation rewrites, deletes or adds files and returns a ``Change`` saying what it did, so a test
can state the outcome it expects of the next crawl.  The initial site, as the crawler from
``index.html`` sees it (depth = shortest link distance):

=============  =====  ==========================================  ============================
page           depth  links to (in order)                         linked from
=============  =====  ==========================================  ============================
index.html     0      about, news, products, blog                 about, products
about.html     1      team, history, index                        index, history
news.html      1      news1, news2, archive                       index, news2
products.html  1      widget, gadget, index                       index
blog.html      1      post1, post2                                index, post1
team.html      2      alice                                       about (only)
history.html   2      about                                       about (only)
news1.html     2      news2                                       news, news2
news2.html     2      news1, news                                 news, news1
archive.html   2      old1, old2                                  news, old2
widget.html    2      gadget                                      products, gadget
gadget.html    2      widget                                      products, widget
post1.html     2      post2, blog                                 blog, post2
post2.html     2      post1                                       blog, post1
alice.html     3      (none)                                      team (only)
old1.html      3      old2                                        archive (only)
old2.html      3      archive                                     archive, old1
=============  =====  ==========================================  ============================

(``.html`` left out of the links.)  ``old1`` and ``old2`` are reachable only through
``archive``: deleting it (a 404 from then on, still linked from ``news``) makes them
unreachable.  ``alice`` is reachable only through ``team``: unlinking ``team`` from
``about`` makes both unreachable.  ``standard_changes()`` applies one of each mutation:

1. ``change("news1.html")``: new body, same links;
2. ``change("products.html", links=["widget.html", "index.html"])``: new body and links
   (``gadget`` stays reachable through ``widget``, at depth 3 now);
3. ``delete("archive.html")``: 404; ``old1``, ``old2`` unreachable;
4. ``add("post3.html", linked_from="blog.html")``: a new page, ``blog`` changed;
5. ``unlink("about.html", "team.html")``: ``about`` changed; ``team``, ``alice`` unreachable.

Everything is deterministic, the files' mtimes included: the site is written with mtime
``EPOCH`` (2025-01-01 00:00:00 UTC) and every mutation advances a clock by one minute and
gives the files it writes that time, so Last-Modified always moves forward with a change
whatever the speed of the test.  ``change(..., keep_mtime=True)`` rewrites a page and puts
its old mtime back (a change within the same second: only a content ETag sees it; nginx's
ETag, mtime and length, does not when the length is the same), and ``touch`` gives a page a
new mtime with the same bytes.

A page's body has a title, a version word (``original``, then ``revised``, ``amended`` ...)
and its links, one ``<a href>`` each; ``change(name, text=...)`` puts your own words in.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.sitegen import Site

EPOCH = 1_735_689_600  # 2025-01-01 00:00:00 UTC: the mtime of the site as built
STEP = 60  # seconds the clock advances at each mutation
SEED = "index.html"

INITIAL_LINKS: dict[str, list[str]] = {
    "index.html": ["about.html", "news.html", "products.html", "blog.html"],
    "about.html": ["team.html", "history.html", "index.html"],
    "news.html": ["news1.html", "news2.html", "archive.html"],
    "products.html": ["widget.html", "gadget.html", "index.html"],
    "blog.html": ["post1.html", "post2.html"],
    "team.html": ["alice.html"],
    "history.html": ["about.html"],
    "news1.html": ["news2.html"],
    "news2.html": ["news1.html", "news.html"],
    "archive.html": ["old1.html", "old2.html"],
    "widget.html": ["gadget.html"],
    "gadget.html": ["widget.html"],
    "post1.html": ["post2.html", "blog.html"],
    "post2.html": ["post1.html"],
    "alice.html": [],
    "old1.html": ["old2.html"],
    "old2.html": ["archive.html"],
}

VERSION_WORDS = ["original", "revised", "amended", "updated", "rewritten", "refreshed", "corrected", "expanded"]


@dataclass(frozen=True)
class Change:
    """What one mutation did.  Page names are file names relative to the site's root."""

    kind: str  # "changed", "deleted", "added", "unlinked" or "touched"
    page: str  # the page changed, deleted, added or touched; for "unlinked", the target of the links removed
    changed: frozenset[str] = frozenset()  # pages still there whose bytes changed
    deleted: frozenset[str] = frozenset()  # pages removed: 404 from now on
    added: frozenset[str] = frozenset()  # new pages
    touched: frozenset[str] = frozenset()  # pages with a new mtime and the same bytes
    unreachable: frozenset[str] = frozenset()  # pages still there, reachable before, not any more
    reachable: frozenset[str] = frozenset()  # pages reachable now and not before (the added ones among them)


@dataclass
class ChangingSite:
    """A site under *root* whose pages ``links`` describes; mutate it with the methods, each returns a Change."""

    root: Path
    links: dict[str, list[str]] = field(default_factory=dict)  # existing pages: their hrefs, in order
    versions: dict[str, int] = field(default_factory=dict)  # how many times each page was rewritten
    texts: dict[str, str] = field(default_factory=dict)  # words given with change(text=...)
    deleted: set[str] = field(default_factory=set)  # pages deleted (and not added back)
    clock: int = EPOCH  # the mtime of the last write

    @classmethod
    def build(cls, root: Path) -> ChangingSite:
        """Write the initial site (the table above) into *root*."""
        site = cls(Path(root))
        site.root.mkdir(parents=True, exist_ok=True)
        for name, hrefs in INITIAL_LINKS.items():
            site.links[name] = list(hrefs)
            site.versions[name] = 0
            site._write(name)
        return site

    # What the site is now

    def pages(self) -> set[str]:
        """The pages that exist."""
        return set(self.links)

    def depths(self, max_depth: int | None = None) -> dict[str, int]:
        """The shortest depth from ``index.html`` of every existing page reachable through existing pages."""
        depths = {SEED: 0}
        queue = deque([SEED])
        while queue:
            name = queue.popleft()
            if max_depth is not None and depths[name] >= max_depth:
                continue
            for href in self.links.get(name, []):
                if href in self.links and href not in depths:
                    depths[href] = depths[name] + 1
                    queue.append(href)
        return depths

    def reachable(self, max_depth: int | None = None) -> set[str]:
        return set(self.depths(max_depth))

    def dead_links(self) -> set[str]:
        """Pages linked from a reachable page that do not exist (a crawl gets 404 for them)."""
        return {href for name in self.reachable() for href in self.links[name] if href not in self.links}

    def as_site(self) -> Site:
        """The site as a ``sitegen.Site``, for ``model_crawl`` and ``shortest_depths``."""
        return Site(self.root, {name: list(hrefs) for name, hrefs in self.links.items()}, set(self.deleted))

    def path(self, name: str) -> Path:
        return self.root / name

    def body(self, name: str) -> bytes:
        return self.path(name).read_bytes()

    def url(self, base: str, name: str) -> str:
        """The page's URL under *base* (``http://127.0.0.1:PORT`` or a URL ending in ``/``)."""
        return f"{base.rstrip('/')}/{name}"

    # Mutations

    def change(
        self, name: str, links: list[str] | None = None, text: str | None = None, keep_mtime: bool = False
    ) -> Change:
        """Rewrite an existing page: a new version word (or *text*), and *links* instead of its links if given."""
        self._existing(name)
        before = self.reachable()
        old_mtime = self.path(name).stat().st_mtime
        self.versions[name] += 1
        if text is not None:
            self.texts[name] = text
        if links is not None:
            self.links[name] = list(links)
        self._write(name, self._tick())
        if keep_mtime:
            os.utime(self.path(name), (old_mtime, old_mtime))
        return self._change("changed", name, before, changed={name})

    def delete(self, name: str) -> Change:
        """Delete a page (its links to it stay: 404 from now on)."""
        self._existing(name)
        if name == SEED:
            raise ValueError("the seed cannot be deleted")
        before = self.reachable()
        self.path(name).unlink()
        del self.links[name]
        self.deleted.add(name)
        self._tick()
        return self._change("deleted", name, before, deleted={name})

    def add(self, name: str, linked_from: str, links: list[str] | tuple[str, ...] = ()) -> Change:
        """Write a new page with *links* and append a link to it to the existing page *linked_from*."""
        if name in self.links:
            raise ValueError(f"{name} exists")
        self._existing(linked_from)
        before = self.reachable()
        mtime = self._tick()
        self.links[name] = list(links)
        self.versions.setdefault(name, 0)
        self.deleted.discard(name)
        self._write(name, mtime)
        self.links[linked_from].append(name)
        self.versions[linked_from] += 1
        self._write(linked_from, mtime)
        return self._change("added", name, before, added={name}, changed={linked_from})

    def unlink(self, page: str, target: str) -> Change:
        """Remove every link from *page* to *target* (*page* changes; *target* may become unreachable)."""
        self._existing(page)
        if target not in self.links[page]:
            raise ValueError(f"{page} does not link to {target}")
        before = self.reachable()
        self.links[page] = [href for href in self.links[page] if href != target]
        self.versions[page] += 1
        self._write(page, self._tick())
        return self._change("unlinked", target, before, changed={page})

    def touch(self, name: str) -> Change:
        """Give a page a new mtime, its bytes unchanged."""
        self._existing(name)
        mtime = self._tick()
        os.utime(self.path(name), (mtime, mtime))
        return Change("touched", name, touched=frozenset({name}))

    def standard_changes(self) -> list[Change]:
        """One of each mutation, as listed in the module's docstring."""
        return [
            self.change("news1.html"),
            self.change("products.html", links=["widget.html", "index.html"]),
            self.delete("archive.html"),
            self.add("post3.html", linked_from="blog.html"),
            self.unlink("about.html", "team.html"),
        ]

    # Writing

    def _existing(self, name: str) -> None:
        if name not in self.links:
            raise KeyError(f"no page {name} in the site")

    def _tick(self) -> int:
        self.clock += STEP
        return self.clock

    def _change(self, kind: str, page: str, before: set[str], **sets: set[str]) -> Change:
        after = self.reachable()
        return Change(
            kind,
            page,
            unreachable=frozenset(before - after - self.deleted),
            reachable=frozenset(after - before),
            **{key: frozenset(value) for key, value in sets.items()},
        )

    def _write(self, name: str, mtime: int = EPOCH) -> None:
        version = self.versions[name]
        word = VERSION_WORDS[version % len(VERSION_WORDS)]
        if version >= len(VERSION_WORDS):
            word += f" {version}"
        title = name.removesuffix(".html")
        text = self.texts.get(name, f"The {title} page.")
        anchors = "".join(f'<li><a href="{href}">{href.removesuffix(".html")}</a></li>\n' for href in self.links[name])
        html = (
            f"<html><head><title>{title}</title></head><body>\n<h1>{title}</h1>\n"
            f"<p>{text} This is the {word} version.</p>\n<ul>\n{anchors}</ul>\n</body></html>\n"
        )
        path = self.path(name)
        path.write_text(html)
        os.utime(path, (mtime, mtime))
