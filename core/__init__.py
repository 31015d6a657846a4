"""ChunkLens core: documents -> chunks (exact spans) -> embeddings -> ChromaDB + BM25 -> retrieval -> metrics.

The packages follow the data: `schema` (the nouns every part shares: documents, spans, chunks, questions,
hits), `ingest` (files, QA sets, the library), `chunkers` (the chunk contract, the
registry, the generic chunkers), `methods` (one package per paper's method), `store` (embeddings, Chroma, BM25,
retrieval), `evaluation` (metrics, the bench, report tables). `services` builds what chunkers need from
`Settings`; `pipeline` runs chunk -> index with caches; `workbench` is what the app does, as plain functions.
Nothing in this package imports Streamlit; the app and the command line both walk through these modules.
"""

__version__ = "0.1.0"
