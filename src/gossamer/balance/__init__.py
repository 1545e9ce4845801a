"""Load balancing across unequal workers: capability figures and their probe (``capability``,
``probe``), the runtime model and its PSO solver (``model``, ``solve``), the allocators
(``allocate``), the first-fit placement and node cost plan (``firstfit``, ``plan``: ``gossamer
plan``).

This package may import the standard library, numpy, psutil, ``gossamer.fetch`` (its stats)
and ``gossamer.stats``; matplotlib (the optional ``plot`` extra) only inside ``plan``'s
``--plot``. It knows nothing of Redis: ``gossamer.cluster`` feeds it figures and publishes
what it decides.
"""
