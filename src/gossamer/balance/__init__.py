"""Load balancing across unequal workers: capability figures and their probe (``capability``,
``probe``), P1's runtime model and PSO solver (``model``, ``solve``), the allocators
(``allocate``), P2's first-fit placement and cost plan (``firstfit``, ``plan``: ``gossamer
plan``).

This package may import the standard library, numpy, psutil, ``gossamer.fetch`` (its stats)
and ``gossamer.stats``; matplotlib (the optional ``plot`` extra) only inside ``plan``'s
``--plot``. It knows nothing of Redis: ``gossamer.cluster`` feeds it figures and publishes
what it decides.
"""
