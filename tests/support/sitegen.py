"""Synthetic sites for crawl tests, with an independent model of the expected crawl."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Site:
    """A generated site: ``links[page]`` lists the hrefs of each page, in order."""

    root: Path
    links: dict[str, list[str]] = field(default_factory=dict)
    dead: set[str] = field(default_factory=set)

    def internal_targets(self, page: str) -> list[str]:
        return [href for href in self.links[page] if not href.startswith("http")]


def write_site(root: Path, links: dict[str, list[str]], dead=()) -> Site:
    """Write one HTML page per key of *links* (relative hrefs or absolute URLs)."""
    root.mkdir(parents=True, exist_ok=True)
    for name, hrefs in links.items():
        anchors = "\n".join(f'<p>Link {i}: <a href="{h}">{h}</a></p>' for i, h in enumerate(hrefs))
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(
            f"<html><head><title>{name}</title></head><body>\n<h1>Page {name}</h1>\n{anchors}\n</body></html>\n"
        )
    return Site(root, dict(links), set(dead))


def generate_site(
    root: Path, pages: int = 20, fanout: int = 3, seed: int = 0, external: int = 2, dead: int = 1
) -> Site:
    """A random site of *pages* pages (``index.html``, ``p1.html`` ...), every
    page reachable from ``index.html``, with back links (cycles), external links
    and links to pages that do not exist."""
    rng = random.Random(seed)
    names = ["index.html"] + [f"p{i}.html" for i in range(1, pages)]
    dead_names = [f"missing{i}.html" for i in range(dead)]
    links: dict[str, list[str]] = {name: [] for name in names}
    for i, name in enumerate(names[1:], start=1):
        links[names[rng.randrange(i)]].append(name)  # a spanning tree
    for name in names:
        for _ in range(rng.randrange(fanout + 1)):
            links[name].append(rng.choice(names))  # cycles, duplicates
    for i in range(external):
        links[rng.choice(names)].append(f"https://external{i}.example/page.html")
    for missing in dead_names:
        links[rng.choice(names)].append(missing)
    for hrefs in links.values():
        rng.shuffle(hrefs)
    return write_site(root, links, dead_names)


def model_crawl(site: Site, max_depth: int, order: str = "tse") -> list[tuple[str, int]]:
    """The pages a TSE crawl saves, as (name, depth) in docID order.

    A plain model of SPEC 2.2: a URL is seen when discovered; ``tse`` pops
    the last pushed, ``bfs`` the first; pages at max_depth are not scanned.
    """
    seen = {"index.html"}
    frontier = deque([("index.html", 0)])
    saved = []
    while frontier:
        name, depth = frontier.pop() if order == "tse" else frontier.popleft()
        if name in site.dead or name not in site.links:
            continue
        saved.append((name, depth))
        if depth >= max_depth:
            continue
        for href in site.internal_targets(name):
            if href not in seen:
                seen.add(href)
                frontier.append((href, depth + 1))
    return saved


def shortest_depths(site: Site) -> dict[str, int]:
    depths = {"index.html": 0}
    queue = deque(["index.html"])
    while queue:
        name = queue.popleft()
        if name not in site.links:
            continue
        for href in site.internal_targets(name):
            if href not in depths:
                depths[href] = depths[name] + 1
                queue.append(href)
    return depths


def generate_multisite(
    root: Path, hosts: list[str], pages: int = 20, fanout: int = 3, cross: int = 2, seed: int = 0
) -> dict[str, list[str]]:
    """One generated site per virtual host under ``root/HOST/`` (for the proxy),
    with *cross* links from each site to pages of the others.

    Returns the link graph: absolute page URL -> absolute URLs it links to."""
    rng = random.Random(seed)
    graph: dict[str, list[str]] = {}
    for number, host in enumerate(hosts):
        site = generate_site(root / host, pages, fanout, seed=seed + number, external=0, dead=1)
        for name, hrefs in site.links.items():
            graph[f"http://{host}/{name}"] = [f"http://{host}/{href}" for href in hrefs]
    pages_of = {host: [url for url in graph if url.startswith(f"http://{host}/")] for host in hosts}
    for host in hosts:
        for _ in range(cross):
            source = rng.choice(pages_of[host])
            target = rng.choice(pages_of[rng.choice([h for h in hosts if h != host])])
            graph[source].append(target)
            name = source.split("/", 3)[3]
            write_site(root / host, {name: [href.replace(f"http://{host}/", "") for href in graph[source]]})
    return graph


def bfs_depths(graph: dict[str, list[str]], seeds: list[str], max_depth: int) -> dict[str, int]:
    """The shortest depth of every page a breadth-first crawl saves (pages that exist)."""
    depths = dict.fromkeys(seeds, 0)
    queue = deque(seeds)
    while queue:
        url = queue.popleft()
        if url not in graph or depths[url] >= max_depth:
            continue
        for target in graph[url]:
            if target not in depths:
                depths[target] = depths[url] + 1
                queue.append(target)
    return {url: depth for url, depth in depths.items() if url in graph}
