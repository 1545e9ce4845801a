"""Content extraction stages: what a crawl keeps of a page beyond its links (PDF text here).

May import the standard library and parsing libraries; never the engine, frontier or sinks.
"""
