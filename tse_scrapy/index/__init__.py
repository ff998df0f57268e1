"""The indexer and the querier (SPEC 3, 4): a page directory to an index file, and queries against it."""
