"""Web archives made by any tool, read back: ``tse import``."""

# The longest URL a page may have, in characters: a crawl follows no link to a longer one, nor a redirect
# (settings.py: TSE_MAX_URL_LENGTH, which may lower it only), and ``tse import`` skips a record at a longer
# one.  Scrapy's URLLENGTH_LIMIT, and the longest URL old browsers took; a page file's URL line is read to
# 64 KB (rules/files/pagedir.py), the frontier's entries keep URLs to 8,192 characters: both hold it.
MAX_URL_CHARACTERS = 2083
