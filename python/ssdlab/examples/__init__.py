"""Host programs built on ssdlab, run as examples (``ssdlab example NAME``).

- ``kvcache``: a log-structured key–value flash cache in the CacheLib manner on a conventional
  drive, the same drive with placement, and a zoned drive (docs/kvcache.md, issue 42 point 4).
"""
