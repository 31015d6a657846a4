"""Where chunks go and how they are found: embeddings (with their vector cache), the Chroma index, the BM25
index, and retrieval over both."""
