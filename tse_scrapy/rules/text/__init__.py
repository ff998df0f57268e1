"""A page's text: its encoding, SPEC words, title and visible text, search fields, analysis, PDF text."""
