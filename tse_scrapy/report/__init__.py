"""The crawl report (``tse report RECORD.jsonl...``): crawl records read, merged and drawn as one HTML page."""

import logging

# Where the user's own matplotlib folder cannot be written (a HOME that is not writable), matplotlib says
# so on stderr in two lines as figures.py imports it, and goes on with a temporary folder: a report needs
# no lasting cache, and tse's commands say one line (a tester's find).  Told here, before any import of it.
logging.getLogger("matplotlib").setLevel(logging.ERROR)
