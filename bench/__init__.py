"""Benchmarks that are not part of the app: `python -m bench.perf` times our chunkers against Chonkie and LangChain;
`python -m bench.load` drives the real app with N concurrent browser sessions."""
