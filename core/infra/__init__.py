"""Infrastructure every layer of `core` may use and that knows nothing of chunks or methods: errors, JSON reading,
files written atomically under locks, the workspace's folders, URLs and keys kept out of logs, upload limits."""
