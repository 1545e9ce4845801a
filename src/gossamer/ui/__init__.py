"""The web side (the ``gossamer ui`` app, ``metrics``); it may import any gossamer module."""
