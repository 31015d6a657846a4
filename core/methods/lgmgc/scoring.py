"""Next-token probabilities from a local causal LM, read at many positions of one forward pass (LGMGC).

The window is wrapped as a chat user turn after a short instruction. At the end of every sentence we read the
probability that the *next* token ends the text. Which tokens count is a setting (`eos_mode`):
- "eos": the tokenizer's end tokens (for SmolLM2-Instruct `<|im_end|>`, which closes the user turn, plus
  `<|endoftext|>`), i.e. "the user's text is complete here";
- "paragraph": tokens that begin with a blank line ("\n\n"), i.e. "a new paragraph starts here";
- "sum": both (they are disjoint token sets, so their probabilities add).

Only the positions we read go through the output layer (its 49k-word vocabulary costs about a fifth of a pass
otherwise). `dtype` = "bfloat16" runs the body in bfloat16, about 1.8x faster on CPUs with AVX-512 BF16; the
probabilities change slightly, so it is part of the scorer's key (and of every chunk cache built on it).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from core.infra.errors import ConfigError
from core.llm.local_model import BUNDLED_SMOLLM2, load_causal_lm

INSTRUCTION = "Is the following text complete? Read it and decide whether it ends at a natural boundary."
EOS_MODES = ("eos", "paragraph", "sum")
DTYPES = ("float32", "bfloat16")


@dataclass
class ScoredWindow:
    probabilities: list[float]  # one per requested position
    n_tokens: int


def rows_before(ends: Sequence[int], positions: Sequence[int]) -> list[int]:
    """For each character position, the last window token that ends after the window's start and at or before
    it (its logits predict what follows the position); -1 when there is none."""
    return [max((i for i, end in enumerate(ends) if 0 < end <= pos), default=-1) for pos in positions]


def end_probability(probs: Any, eos_ids: list[int], para_ids: list[int], eos_mode: str) -> float:
    """p(end of text) from one next-token distribution (a torch or numpy row): the end tokens' mass, the
    blank-line tokens' mass, or both (disjoint sets, so they add)."""
    p_eos = float(probs[eos_ids].sum()) if eos_ids else 0.0
    p_para = float(probs[para_ids].sum()) if para_ids else 0.0
    return {"eos": p_eos, "paragraph": p_para, "sum": p_eos + p_para}[eos_mode]


class NextTokenScorer(Protocol):
    """What lg / lgmgc ask of their "scorer" service, whichever engine runs the model."""

    key: str  # part of every chunk cache built on it
    label: str
    forward_passes: int

    def score(self, text: str, positions: Sequence[int]) -> ScoredWindow: ...




def scorer_of(context: Any) -> NextTokenScorer:
    """The run's next-token scorer (the need "scorer" of a `ChunkerContext`, or of `Services`)."""
    return context.get("scorer")

SCORER_ENGINES = ("transformers", "llamacpp")


class WindowMemo:
    """Windows already scored in this process, by (text, positions): lg and lgmgc score the same windows, and
    every engine keeps what it scored the same way. Bounded, so a long session cannot grow it without end."""

    LIMIT = 20_000

    def __init__(self) -> None:
        self._scored: dict[tuple[str, tuple[int, ...]], ScoredWindow] = {}

    def get(self, text: str, positions: Sequence[int]) -> ScoredWindow | None:
        return self._scored.get((text, tuple(positions)))

    def keep(self, text: str, positions: Sequence[int], scored: ScoredWindow) -> ScoredWindow:
        if len(self._scored) < self.LIMIT:
            self._scored[(text, tuple(positions))] = scored
        return scored

    def clear(self) -> None:
        """Forget every window (`python -m bench.scorer` times the windows lg scored afresh)."""
        self._scored.clear()


class EosScorer:
    def __init__(self, model: str = BUNDLED_SMOLLM2, cache_dir: Path | None = None, eos_mode: str = "eos",
                 max_tokens: int = 2048, dtype: str = "float32") -> None:
        if eos_mode not in EOS_MODES:
            raise ConfigError(f"eos_mode must be one of {', '.join(EOS_MODES)}")
        if dtype not in DTYPES:
            raise ConfigError(f"scorer dtype must be one of {', '.join(DTYPES)}")
        self.dtype = dtype
        self.model_name = model
        self.cache_dir = str(cache_dir or Path.home() / ".cache" / "chunklens" / "models")
        self.eos_mode = eos_mode
        self.max_tokens = max_tokens
        precision = [] if dtype == "float32" else [dtype]  # float32 keys stay as they were before dtype existed
        self.key = ":".join(["scorer", model, eos_mode, *precision])
        name = "SmolLM2-135M-Instruct" if model == BUNDLED_SMOLLM2 else model
        self.label = " ".join([name, f"p({eos_mode})", *precision])
        self.forward_passes = 0
        self._lock = threading.Lock()
        self._ids: tuple[list[int], list[int]] | None = None
        self._memo = WindowMemo()

    def _token_sets(self, tok) -> tuple[list[int], list[int]]:
        if self._ids is None:
            eos = {tok.eos_token_id} if tok.eos_token_id is not None else set()
            for special in ("<|endoftext|>", "<|im_end|>", "</s>", "<|eot_id|>"):
                tid = tok.convert_tokens_to_ids(special)
                if isinstance(tid, int) and tid >= 0 and tok.convert_ids_to_tokens(tid) == special:
                    eos.add(tid)
            para = [i for i in range(len(tok)) if i not in eos and tok.decode([i]).startswith("\n\n")]
            self._ids = (sorted(eos), para)
        return self._ids

    def score(self, text: str, positions: Sequence[int]) -> ScoredWindow:
        """p(end of text) right after each character offset in `positions`, from ONE forward pass over `text`
        (none when the same window was scored before in this process)."""
        import torch

        if (known := self._memo.get(text, positions)) is not None:
            return known

        tok, lm = load_causal_lm(self.model_name, self.cache_dir, self.dtype)
        eos_ids, para_ids = self._token_sets(tok)
        head = tok.apply_chat_template([{"role": "user", "content": INSTRUCTION + "\n\n"}], tokenize=False,
                                       add_generation_prompt=False) if tok.chat_template else INSTRUCTION + "\n\n"
        # cut the chat template at the user's content so the window is the open end of the user turn
        marker = INSTRUCTION + "\n\n"
        prefix = head[: head.index(marker) + len(marker)] if marker in head else marker
        enc = tok(prefix + text, return_offsets_mapping=True, add_special_tokens=False, truncation=True,
                  max_length=self.max_tokens, return_tensors="pt")
        offsets = enc.pop("offset_mapping")[0].tolist()
        base = len(prefix)
        ends = [e - base for _, e in offsets]
        # the last token that ends at or before each sentence end: its logits predict what follows
        rows = rows_before(ends, positions)
        wanted = sorted({r for r in rows if r >= 0})
        with self._lock, torch.inference_mode():
            hidden = lm.base_model(**enc).last_hidden_state[0, wanted]
            probs = torch.softmax(lm.get_output_embeddings()(hidden).float(), dim=-1) if wanted else None
            self.forward_passes += 1
        out = []
        for r in rows:
            if r < 0 or probs is None:
                out.append(0.0)
                continue
            out.append(end_probability(probs[wanted.index(r)], eos_ids, para_ids, self.eos_mode))
        return self._memo.keep(text, positions, ScoredWindow(out, len(offsets)))
