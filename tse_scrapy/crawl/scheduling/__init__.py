"""Which request goes next: the scheduler, its frontiers, the dupefilter, requests as data."""
