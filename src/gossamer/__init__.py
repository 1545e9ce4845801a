"""gossamer: a distributed web crawler."""

__version__ = "0.1.0"
