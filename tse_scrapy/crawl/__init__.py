"""The crawler's Scrapy components for one process (SPEC 2): scheduler and
frontiers, dupefilter, offsite and URL filters, robots.txt, politeness, the
page-directory pipeline and the progress log.  ``settings.py`` wires them."""
