"""What is written and read back: page files, notes, index files, crawl records, frontier entries, archives."""
