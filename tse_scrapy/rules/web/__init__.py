"""What the web gives: URLs, links, robots directives, sitemaps, canonical URLs and duplicates."""
