"""Benchmarks that are not part of the app: `python -m bench.perf` times our chunkers against Chonkie and LangChain."""
