"""Tools for developing and trying tse-scrapy: a loopback site server, the
demo site and ``make run``'s demo, and the contracts of ``scrapy check tse``."""
