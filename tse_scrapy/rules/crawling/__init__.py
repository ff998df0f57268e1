"""A crawl's arguments, change rates, progress and ETA, units, and secrets kept out of messages."""
