"""Cluster mode: many workers crawl one job together through Redis."""
