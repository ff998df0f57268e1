"""Scrapy settings of tse-scrapy: every default lives here; override with -s."""

from pathlib import Path

from scrapy.settings.default_settings import DOWNLOADER_MIDDLEWARES_BASE as SCRAPY_DOWNLOADER_MIDDLEWARES
from scrapy.settings.default_settings import EXTENSIONS_BASE as SCRAPY_EXTENSIONS

from . import __version__
from .rules.files.pagedir import MAX_URL_CHARACTERS

BOT_NAME = "tse"
SPIDER_MODULES = ["tse_scrapy.spiders"]
NEWSPIDER_MODULE = "tse_scrapy.spiders"
COMMANDS_MODULE = "tse_scrapy.commands"

USER_AGENT = f"tse-scrapy/{__version__} (Tiny Search Engine crawler; 1 request/s, obeys robots.txt)"
ROBOTSTXT_OBEY = True

# Politeness (SPEC 2.2.6): at least one second between the starts of any two
# requests to a server, robots.txt included, never randomized below it.
DOWNLOAD_DELAY = 1.0
# Scrapy 2.19 spells RANDOMIZE_DOWNLOAD_DELAY=False this way (the old name
# still works but warns); the default jitter of +-50% would break the 1 s rule.
DOWNLOAD_DELAY_JITTER = 0.0
# A robots.txt Crawl-delay longer than DOWNLOAD_DELAY is honoured up to this many seconds: a site's
# robots.txt is input like any other, and "Crawl-delay: 1e9" would stall its part of the crawl for good.
TSE_MAX_CRAWL_DELAY = 60.0
CONCURRENT_REQUESTS = 1
# A page that takes longer, or is larger, fails (logged Failed, no docID).
# 32 MB is 30 times the largest page of the reference sites.
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 32 * 1024 * 1024
DOWNLOAD_WARNSIZE = 8 * 1024 * 1024
# A response's status line and headers, in bytes, at most: past it the download fails ("headers larger
# than TSE_MAX_HEADER_BYTES"), its connection closed, as a body past DOWNLOAD_MAXSIZE does (a server
# sending 60,000 header lines of 10 KB took the crawl to 754 MB).  The pages of the reference sites
# send under 1 KB; large cookies and CSP headers, tens of KB.
TSE_MAX_HEADER_BYTES = 1024 * 1024
DOWNLOAD_HANDLERS = {
    "http": "tse_scrapy.crawl.downloader.handler.BoundedHeadersDownloadHandler",
    "https": "tse_scrapy.crawl.downloader.handler.BoundedHeadersDownloadHandler",
}
# A page's outputs are processed one at a time, in the order the spider
# yields them: the progress log keeps link order and the page item, yielded
# last, is saved after all its links are queued.
CONCURRENT_ITEMS = 1

SCHEDULER = "tse_scrapy.crawl.scheduling.scheduler.TseScheduler"
DUPEFILTER_CLASS = "tse_scrapy.crawl.scheduling.dupefilter.NormalizedUrlDupeFilter"
# Scrapy imports every component listed, even one set to None: CookiesMiddleware's
# module imports tldextract, requests and urllib3 (0.05 s of start-up), so it is
# left out here and OptionalCookiesMiddleware stands in for it.
DOWNLOADER_MIDDLEWARES_BASE = {
    path: order
    for path, order in SCRAPY_DOWNLOADER_MIDDLEWARES.items()
    if path != "scrapy.downloadermiddlewares.cookies.CookiesMiddleware"
}
DOWNLOADER_MIDDLEWARES = {
    "tse_scrapy.resume.replay.ReplayMiddleware": 10,
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
    "tse_scrapy.crawl.downloader.offsite.PrefixOffsiteMiddleware": 50,
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "tse_scrapy.crawl.downloader.robots.TseRobotsTxtMiddleware": 100,
    # Asks for known pages with their validators; a 304 becomes the saved copy.
    "tse_scrapy.crawl.downloader.conditional.ConditionalRequestMiddleware": 580,
    # --render: after HttpCompressionMiddleware (590) has decoded the page, before the 304s become saved copies.
    "tse_scrapy.crawl.downloader.render.RenderMiddleware": 585,
    # The reference saves a page with a <meta http-equiv="refresh"> as it is
    # (SPEC 2.2.5: a fetch succeeds on HTTP 200); following it would also cost
    # a decode and a parse of every body.
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    # Scrapy's, without its warning at start when no Referer is sent (REFERER_ENABLED below).
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
    "tse_scrapy.crawl.downloader.redirect.RedirectWithoutRefererMiddleware": 600,
    "scrapy.downloadermiddlewares.httpproxy.HttpProxyMiddleware": None,
    "tse_scrapy.crawl.downloader.httpproxy.CachedHttpProxyMiddleware": 750,
    # Scrapy's CookiesMiddleware, imported only when COOKIES_ENABLED (below).
    "tse_scrapy.crawl.downloader.cookies.OptionalCookiesMiddleware": 700,
    # Next to the downloader: it sees every exchange as sent and as received
    # (before decompression, redirects and 304 handling).
    "tse_scrapy.crawl.downloader.warc.WarcMiddleware": 960,
    # It sees every attempt as sent and answered (robots.txt, redirects and retries
    # included), and before a distributed worker's politeness wait (950).
    "tse_scrapy.crawl.downloader.record.CrawlRecordMiddleware": 940,
}
# No cookies are kept, as the reference crawler keeps none: a server cannot
# answer a page differently by what the crawl fetched before it, and a crawl
# is spared a cookie jar's cost per request.  -s COOKIES_ENABLED=True turns
# on Scrapy's own handling.
COOKIES_ENABLED = False
SPIDER_MIDDLEWARES = {
    # The spider sets each link's depth and never scans a page at maxDepth
    # (SPEC 2.2.2), so DepthMiddleware would never drop a request; it and the
    # meta-copy check (the spider builds every meta afresh) are pure cost per link.
    "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
    "scrapy.spidermiddlewares.metacopy.MetaCopyDetectionMiddleware": None,
    # It drops a link longer than 2,083 characters with no word in the progress
    # log, where the TSE logs Found and a verdict for every link (SPEC 2.3):
    # TSE_MAX_URL_LENGTH (below) bounds them, said.
    "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware": None,
    # It marks start requests for the queues of Scrapy's scheduler, which
    # TseScheduler replaces; every other output it only passes on.
    "scrapy.spidermiddlewares.start.StartSpiderMiddleware": None,
}
# No Referer header, as the reference crawler sends none: Scrapy's RefererMiddleware
# works out a referrer policy for every link a page yields, and wraps the
# spider's output in one more layer (5-7 % of a fast crawl's CPU, order=bfs).
# -s REFERER_ENABLED=True sends one.
REFERER_ENABLED = False
ITEM_PIPELINES = {"tse_scrapy.crawl.pipeline.PageDirPipeline": 300}
# Scrapy imports every extension it lists, even one disabled: the remote
# control's module imports aiohttp (0.1 s of start-up), the telnet console's
# twisted.conch.  Both are off here, so they are not listed at all.
_SCRAPY_EXTENSIONS_OFF = (
    "scrapy.extensions.remote_control.RemoteControl",
    "scrapy.extensions.telnet.TelnetConsole",
    # It unpickles JOBDIR/spider.state, which a JOBDIR from elsewhere makes run anything (a review's
    # find); tse's spider keeps nothing in ``spider.state`` (its crawl state is resume/'s, data only).
    "scrapy.extensions.spiderstate.SpiderState",
)
EXTENSIONS_BASE = {path: order for path, order in SCRAPY_EXTENSIONS.items() if path not in _SCRAPY_EXTENSIONS_OFF}
EXTENSIONS = {
    "tse_scrapy.resume.extension.CrawlStateExtension": 0,
    "tse_scrapy.update.extension.UpdateExtension": 1,  # needs the crawl state
    "tse_scrapy.crawl.extensions.politeness.Politeness": 500,
    "tse_scrapy.crawl.extensions.progress.CrawlProgress": 600,
    # A progress log that cannot be written (tse crawl ... | head) stops the crawl, resumable.
    "tse_scrapy.crawl.extensions.progressoutput.ProgressOutput": 650,
    "tse_scrapy.crawl.extensions.gcthreshold.GcThreshold": 700,
    # A seed that could not be fetched, and why: said in one line at the end (crawl/outcome.py).
    "tse_scrapy.crawl.seeds.SeedFailures": 800,
}
# Python's cycle collector walks young objects every TSE_GC_THRESHOLD net
# allocations while a crawl runs (Python's default: 700; 0 keeps it).
TSE_GC_THRESHOLD = 10000
TELNETCONSOLE_ENABLED = False
# Scrapy's stats and log messages at a lower cost per page (see their modules).
STATS_CLASS = "tse_scrapy.crawl.extensions.stats.TseStatsCollector"
LOG_FORMATTER = "tse_scrapy.crawl.extensions.logformatter.QuietLogFormatter"
REMOTE_CONTROL_ENABLED = False

# The spider sets these from its arguments (seed, pagedir, depth, order, prefix).
TSE_ORDER = "tse"
TSE_PREFIXES = ["http://cs50tse.cs.dartmouth.edu/tse/"]
TSE_PAGEDIR = None
TSE_ARGUMENTS = {}
TSE_ALLOW = []  # regular expressions a URL must match one of (crawl/urlfilter.py)
TSE_DENY = []  # regular expressions a URL must match none of
TSE_DENY_EXT = None  # None: the TSE rule (.htm* only); else extensions to refuse
TSE_PDF = False  # --pdf: PDF documents are fetched (.pdf is added to the TSE rule), saved and indexed
TSE_SITEMAPS = False  # --sitemaps: the prefixes' sitemaps are read, their URLs crawled from depth 0
# The longest URL crawled, in characters (normalized, as its page file's first line holds it): a link to a
# longer one is logged Found then IgnDeny and counted with the denied links, a redirect or a seed to one
# fails ("URL too long").  2,083, Scrapy's URLLENGTH_LIMIT, the bound `tse import` skips records past
# (rules/files/pagedir.py): it may be lowered, not raised (a larger value is taken as 2,083, with a warning).
TSE_MAX_URL_LENGTH = MAX_URL_CHARACTERS
# Links followed on a page at most, its first in order, the rest logged once (0: all).  A page of a million
# links (1.7 MB gzipped) took 80 s of CPU and 500 MB of crawl state; Python's genindex-all holds 17,242.
TSE_PAGE_LINKS = 50_000
# Page URLs taken from the sitemaps in one crawl (each a request and a lastmod kept), and their characters
# in all (the crawl's state keeps a URL about three times: 100 million characters are about 400 MB); 0: no
# bound.
TSE_SITEMAP_PAGES = 1_000_000
TSE_SITEMAP_CHARACTERS = 100_000_000
# --render: HTML pages loaded in headless Chromium (crawl/downloader/render.py, docs/crawling.md).
TSE_RENDER = False
TSE_CHROMIUM = None  # the browser; None: chromium on PATH (Debian's), else /usr/bin/chromium
TSE_RENDER_PAGES = 2  # page loads at once (each in a browser context of its own); at least 1
TSE_RENDER_TIMEOUT = 15.0  # seconds a page load may take to settle, from when the page is given to the browser
# Seconds any other browser call (a context, a page, a route) may take; longer: the browser is started anew
TSE_RENDER_CALL_TIMEOUT = 10.0
TSE_RENDER_MAX_REQUESTS = 100  # the browser's own requests a page load may make (0 or more); the rest are aborted
TSE_RENDER_RECYCLE = 250  # page loads after which the browser and Playwright's driver are started anew (0: never)
TSE_RENDER_ARGS: list[str] = []  # more Chromium flags (-s TSE_RENDER_ARGS=--flag,--other=value)
# Hosts a rendered page's requests may reach besides the prefixes' and seeds' whatever their addresses (others
# only when public: docs/crawling.md); -s TSE_RENDER_HOSTS=cdn.lan,10.0.0.7
TSE_RENDER_HOSTS: list[str] = []

# order=priority: the class that scores a queued URL (crawl/scheduling/frontier.py).
TSE_PRIORITIZER = "tse_scrapy.crawl.scheduling.frontier.InlinkPrioritizer"
# Stop after exactly this many saved pages (0: no limit); CLOSESPIDER_PAGECOUNT
# is taken as this, since Scrapy's own count overshoots under concurrency.
TSE_MAX_PAGES = 0

# Durable crawl state (resume/statedb.py): in PAGEDIR/.tse-state.sqlite,
# removed when the crawl finishes, or in JOBDIR when one is set.  NORMAL
# survives a killed process; FULL, with TSE_FSYNC, survives a power cut too.
TSE_STATE_ENABLED = True
TSE_STATE_SYNCHRONOUS = "NORMAL"
TSE_FSYNC = False

# Keeping a crawl fresh (docs/updating.md).  TSE_VALIDATORS records each
# page's ETag, Last-Modified and change history in PAGEDIR/.tse-pages.sqlite
# (a crawl without it writes exactly the SPEC 2 directory); an update (spider
# argument update=yes) always keeps them.  TSE_CHANGES: with an update, a
# JSON-lines file of what changed.  TSE_WARC: archive every HTTP exchange in
# this .warc.gz file (implies TSE_VALIDATORS).
TSE_VALIDATORS = False
TSE_CHANGES = None
TSE_WARC = None

# Seeing a crawl (docs/progress.md).  TSE_PROGRESS: the status line with an
# ETA at the bottom of the terminal ("auto": when stderr is a terminal and the
# crawl is not a scrapyd job; False: never).  TSE_RECORD: write one JSON line
# per request to this file (appended to on resume); `tse report` plots it.
TSE_PROGRESS = "auto"
# --links html: a page's X-Robots-Tag header and <meta name="robots"> are obeyed
# (noindex: saved, never an answer; nofollow: its links are not followed);
# True ignores them (--ignore-robots-meta).
TSE_IGNORE_ROBOTS_META = False
TSE_RECORD = None

# Distributed crawls (docs/distributed.md): set TSE_REDIS_URL and every
# worker started with the same crawl name shares one breadth-first crawl.
# Its components (distributed/wiring.py) replace the ones above only then,
# so a crawl of one process never imports Redis.
# The URL may hold a password: give "env" to read it from the environment
# variable TSE_REDIS_URL instead (it then appears in no process list).
TSE_REDIS_URL = None
TSE_CRAWL_NAME = None  # default: derived from the seeds
TSE_REDIS_KEEP = False  # keep a finished crawl's keys in Redis
# A worker renews the leases of the pages it holds every third of this; a
# dead worker's pages go back to the frontier when theirs run out.
TSE_LEASE_SECONDS = 30.0
# How often an idle worker asks Redis for work (other workers' pages may
# still add some).
TSE_REDIS_POLL_INTERVAL = 0.1
# How long a worker waits for a Redis it cannot reach (retrying, backing off)
# before it stops (exit 1); starting it again continues the crawl.
TSE_REDIS_PATIENCE = 300.0
# Before format 3 (requests as data), a crawl's frontier held pickles: a worker
# given this converts such a crawl, checking every entry and running none.
TSE_REDIS_MIGRATE = False
TSE_HOST_DELAY = 0.0  # set from DOWNLOAD_DELAY in a distributed crawl
TSE_WORKER = None  # set to host:pid in a distributed crawl

# `scrapy check tse`: the contracts of spiders/tse.py, run on this site served
# on 127.0.0.1 (no network), crawled at this depth.
SPIDER_CONTRACTS = {
    "tse_scrapy.devtools.contracts.LocalSiteContract": 10,
    "tse_scrapy.devtools.contracts.PageDepthContract": 20,
    "tse_scrapy.devtools.contracts.InternalFetchesContract": 30,
}
TSE_CHECK_SITE = str(Path(__file__).resolve().parent / "devtools" / "demo_site")
TSE_CHECK_DEPTH = 1

# Scrapy re-parses the callback's source on every response to warn about a
# generator that returns a value (its cache is keyed on short-lived bound
# methods): 14 % of a fast crawl's CPU, for a warning the tse spider never needs.
WARN_ON_GENERATOR_RETURN_VALUE = False

LOG_LEVEL = "INFO"
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"
