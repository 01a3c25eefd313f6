"""Where a file's bytes come from: content keys and downloads, the bounded on-disk
content cache, and read-ahead."""
