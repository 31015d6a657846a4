"""The embedder a spec names, behind the vector cache: the one place that knows every embedder implementation
(`core.store.embeddings` holds the interface and the torch and OpenAI ones, `core.store.onnx_embedder` the
default MiniLM on onnxruntime, built on the interface)."""

from __future__ import annotations

import threading
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
from core.store.onnx_embedder import OnnxMiniLMEmbedder, default_model_folder


def make_embedder(spec: str = BUNDLED_MINILM_FP32, long_text: LongText = "truncate", cache_dir: Path | None = None,
                  base_url: str | None = None, api_key: str | None = None) -> Embedder:
    """`spec` is `bundled:minilm-fp32` (all-MiniLM-L6-v2 on onnxruntime), `bundled:minilm-int8` (the same model
    computing in int8), `bundled:all-MiniLM-L6-v2` (the same on torch, sentence-transformers), a local folder, a
    Hugging Face id, or `openai:<model>`."""
    inner: Embedder
    if spec.startswith("openai:"):
        inner = OpenAIEmbedder(spec.split(":", 1)[1], base_url=base_url, api_key=api_key)
    else:
        inner = local_embedder(spec, long_text)
    if cache_dir is None:
        return inner
    return CachedEmbedder(inner, EmbeddingCache(cache_dir / "embeddings.sqlite"))


_LOCAL: dict[tuple[str, str, str], Embedder] = {}
_LOCAL_LOCK = threading.Lock()


def local_embedder(spec: str, long_text: LongText = "truncate") -> Embedder:
    """The in-process model `spec` names, loaded once per process and shared by every caller that names it.

    A model is read-only after loading and both local embedders are thread-safe, so the services of every
    workspace, settings combination and session can share one: a second library, a second typed key or a second
    test workspace costs a vector cache, not another copy of the model (about 90 MB each) and its thread pool. The
    ONNX model folder is part of the key, since it may be set per process (CHUNKLENS_MODEL_CACHE)."""
    key = (spec, long_text, str(default_model_folder()))
    with _LOCAL_LOCK:
        held = _LOCAL.get(key)
        if held is None:
            if spec in (BUNDLED_MINILM_FP32, BUNDLED_MINILM_INT8):
                precision = "fp32" if spec == BUNDLED_MINILM_FP32 else "int8"
                held = OnnxMiniLMEmbedder(long_text=long_text, precision=precision)
            else:
                held = SentenceTransformerEmbedder(spec, long_text=long_text)
            _LOCAL[key] = held
        return held
