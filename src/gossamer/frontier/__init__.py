"""The frontier: what to crawl next, when, and whether robots.txt allows it."""
