"""Load balancing across unequal workers: capability figures, runtime model, allocators."""
