"""The core both fronts stand on: the one builder, the start they share, the cache's owner."""
