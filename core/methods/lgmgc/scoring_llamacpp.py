"""LGMGC's next-token scorer on llama.cpp: the bundled GGUF read in-process, p(end of text) at many positions
from one evaluation of the window.

Only the read positions get logits: the window goes to `llama_decode` as one batch whose `logits` flags are set
at the sentence ends alone, as the torch scorer sends only those rows through the output layer (and no
n_ctx x 49k score table is kept, as `logits_all` would).

Why a second scorer: the transformers path first de-quantises the GGUF into a float32 checkpoint (about 12 s
once, then a load of a few seconds per process) and needs torch; llama.cpp reads the quantised file as it is
(under a second) and runs its Q4_1 weights directly. The two read the same weights, so their curves are close but
not equal (llama.cpp multiplies in 4/8-bit blocks); `python -m bench.scorer` measures both against each other:
on this 2-core CPU llama.cpp takes about three times torch's time per window (docs/PERF.md), so torch stays the
default. The key differs from the torch scorer's, so chunk caches built on one are never read for the other.

Same interface as `EosScorer`: `score(text, positions)`, `key`, `label`, `forward_passes`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.infra.errors import ConfigError
from core.llm.llamacpp_backend import load_llama
from core.llm.local_model import bundled_gguf
from core.methods.lgmgc.scoring import (
    EOS_MODES,
    INSTRUCTION,
    ScoredWindow,
    WindowMemo,
    end_probability,
    rows_before,
)

N_CTX = 2048
_END_TOKENS = ("<|endoftext|>", "<|im_end|>", "</s>", "<|eot_id|>")


def _user_turn_prefix(llama: Any) -> str:
    """The model's chat template cut right after the instruction, so the window is the open end of a user turn
    (as the torch scorer does); plain instruction when the file has no template."""
    template = llama.metadata.get("tokenizer.chat_template")
    marker = INSTRUCTION + "\n\n"
    if not template:
        return marker
    import jinja2

    rendered = jinja2.Environment().from_string(template).render(
        messages=[{"role": "user", "content": marker}], add_generation_prompt=False, bos_token="", eos_token="")
    return rendered[: rendered.index(marker) + len(marker)] if marker in rendered else marker


def _decode(llama: Any, tokens: list[int], wanted: list[int]) -> dict[int, np.ndarray]:
    """One evaluation of `tokens` from an empty cache; the logits of the positions in `wanted` only."""
    import llama_cpp as C

    C.llama_memory_clear(C.llama_get_memory(llama.ctx), True)
    batch = C.llama_batch_init(len(tokens), 0, 1)
    try:
        flags = set(wanted)
        for i, tid in enumerate(tokens):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = tid, i, 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = i in flags
        batch.n_tokens = len(tokens)
        if C.llama_decode(llama.ctx, batch) != 0:
            raise ConfigError("llama.cpp could not evaluate the window")
        n_vocab = llama.n_vocab()
        return {i: np.ctypeslib.as_array(C.llama_get_logits_ith(llama.ctx, i), shape=(n_vocab,)).astype(np.float64)
                for i in wanted}
    finally:
        C.llama_batch_free(batch)


class LlamaCppEosScorer:
    """p(eos / paragraph / sum) after character offsets of a window, one llama.cpp evaluation per window."""

    def __init__(self, model: str | None = None, eos_mode: str = "eos", n_ctx: int = N_CTX,
                 n_threads: int = 2) -> None:
        if eos_mode not in EOS_MODES:
            raise ConfigError(f"eos_mode must be one of {', '.join(EOS_MODES)}")
        self.model_path = str(Path(model) if model else bundled_gguf())
        self.eos_mode, self.n_ctx, self.n_threads = eos_mode, n_ctx, n_threads
        file = Path(self.model_path).name
        self.key = f"scorer:llamacpp:{file}:{eos_mode}"
        name = "SmolLM2-135M-Instruct" if model is None else file
        self.label = f"{name} p({eos_mode}) llama.cpp"
        self.forward_passes = 0
        self._lock = threading.Lock()
        self._ids: tuple[list[int], list[int]] | None = None
        self._prefix: list[int] | None = None
        self._memo = WindowMemo()

    def _llama(self) -> Any:
        return load_llama(self.model_path, self.n_ctx, self.n_threads, n_batch=self.n_ctx)

    def _token_sets(self, llama: Any) -> tuple[list[int], list[int]]:
        if self._ids is None:
            eos = {llama.token_eos()}
            for special in _END_TOKENS:
                ids = llama.tokenize(special.encode(), add_bos=False, special=True)
                if len(ids) == 1 and llama.detokenize(ids, special=True) == special.encode():
                    eos.add(ids[0])
            para = [i for i in range(llama.n_vocab())
                    if i not in eos and llama.detokenize([i]).startswith(b"\n\n")]
            self._ids = (sorted(eos), para)
        return self._ids

    def _tokens(self, llama: Any, text: str) -> tuple[list[int], list[int]]:
        """Prefix + window tokens, and each window token's end as a character offset into `text`."""
        if self._prefix is None:
            self._prefix = llama.tokenize(_user_turn_prefix(llama).encode(), add_bos=False, special=True)
        room = self.n_ctx - len(self._prefix)
        ids = llama.tokenize(text.encode(), add_bos=False, special=False)[:room]
        ends, seen = [], b""
        for tid in ids:
            seen += llama.detokenize([tid])
            ends.append(len(seen.decode("utf-8", errors="ignore")))
        return [*self._prefix, *ids], ends

    def score(self, text: str, positions: Sequence[int]) -> ScoredWindow:
        if (known := self._memo.get(text, positions)) is not None:
            return known
        llama = self._llama()
        eos_ids, para_ids = self._token_sets(llama)
        with self._lock:
            tokens, ends = self._tokens(llama, text)
            base = len(tokens) - len(ends)
            rows = rows_before(ends, positions)
            wanted = sorted({base + r for r in rows if r >= 0})
            logits = _decode(llama, tokens, wanted)
            self.forward_passes += 1
        out = []
        for r in rows:
            if r < 0:
                out.append(0.0)
                continue
            row = logits[base + r] - logits[base + r].max()
            out.append(end_probability(np.exp(row) / np.exp(row).sum(), eos_ids, para_ids, self.eos_mode))
        return self._memo.keep(text, positions, ScoredWindow(out, len(ends)))
