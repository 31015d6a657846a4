"""The embedder a spec names, behind the vector cache: the one place that knows every embedder implementation
(`core.store.embeddings` holds the interface and the torch and OpenAI ones, `core.store.onnx_embedder` the
default MiniLM on onnxruntime, built on the interface)."""

from __future__ import annotations

from pathlib import Path

from core.store.embeddings import (
    BUNDLED_MINILM_FP32,
    BUNDLED_MINILM_INT8,
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    LongText,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
)
from core.store.onnx_embedder import OnnxMiniLMEmbedder


def make_embedder(spec: str = BUNDLED_MINILM_FP32, long_text: LongText = "truncate", cache_dir: Path | None = None,
                  base_url: str | None = None, api_key: str | None = None) -> Embedder:
    """`spec` is `bundled:minilm-fp32` (all-MiniLM-L6-v2 on onnxruntime), `bundled:minilm-int8` (the same model
    computing in int8), `bundled:all-MiniLM-L6-v2` (the same on torch, sentence-transformers), a local folder, a
    Hugging Face id, or `openai:<model>`."""
    inner: Embedder
    if spec in (BUNDLED_MINILM_FP32, BUNDLED_MINILM_INT8):
        inner = OnnxMiniLMEmbedder(long_text=long_text, precision="fp32" if spec == BUNDLED_MINILM_FP32 else "int8")
    elif spec.startswith("openai:"):
        inner = OpenAIEmbedder(spec.split(":", 1)[1], base_url=base_url, api_key=api_key)
    else:
        inner = SentenceTransformerEmbedder(spec, long_text=long_text)
    if cache_dir is None:
        return inner
    return CachedEmbedder(inner, EmbeddingCache(cache_dir / "embeddings.sqlite"))
