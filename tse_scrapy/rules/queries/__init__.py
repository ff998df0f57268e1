"""Queries: SPEC 4's language and scores, BM25, the search box's language, and snippets."""
