"""ChunkLens core: documents -> chunks (exact spans) -> embeddings -> ChromaDB -> retrieval -> metrics.

Nothing in this package imports Streamlit; the app and the command line both walk through these modules.
"""

__version__ = "0.1.0"
