"""The crawl report (``tse report RECORD.jsonl...``): crawl records read, merged and drawn as one HTML page."""
