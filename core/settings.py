"""App settings, validated, persisted as JSON in the workspace root.

An API key is never part of the settings: it comes from the environment or is typed into the app for the
current browser session only, and is never written anywhere.

The fields fall in two groups (docs/SECURITY.md). `OPERATOR_FIELDS` say where data and keys go, where files live
and how much may be uploaded: on a shared server they come from the operator (`core.server_config`) and a visitor
cannot change them. The rest are a visitor's choices, kept per browser session (and with the visitor's library).
`ADDRESS_FIELDS` are never saved from a browser, in any mode: an address typed in one session must not change
where another session sends its documents.

Two choices name what runs a language model: `cnm_backend` for CHOP's CNM tags and `chat_backend` for generated
answers and questions and LumberChunker. Both run the one `model_name`, and both reach the one OpenAI-compatible
`model_server_url`. Settings saved under the old names (`llm`, `chat`, `llm_model`, `llm_base_url`, `llm_timeout`:
`RENAMED`) still load under the new ones; saving writes only the new names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast, get_args

from pydantic import BaseModel, Field, ValidationError, model_validator

from core.infra.workspace import default_root
from core.store.choices import Fusion, RerankerName, RetrievalMode
from core.store.embeddings import BUNDLED_MINILM_FP32

if TYPE_CHECKING:
    from core.store.retrieval import RetrievalSettings

SETTINGS_FILE = "settings.json"
#: a setting's old name -> its name now; settings.json, a library's choices.json, the operator's server.toml and
#: the command line still take the old ones
RENAMED = {"llm": "cnm_backend", "chat": "chat_backend", "llm_model": "model_name",
           "llm_base_url": "model_server_url", "llm_timeout": "model_timeout"}


def old_names_given(data: Mapping[str, object]) -> list[tuple[str, str]]:
    """(old, new) for each old name (`RENAMED`) in `data`."""
    return [(old, new) for old, new in RENAMED.items() if old in data]


def with_new_names(data: Mapping[str, object]) -> dict[str, object]:
    """`data` with each value given under an old name moved to its new name; where both are given, the new one's
    value is kept."""
    moved = {k: v for k, v in data.items() if k not in RENAMED}
    for old, new in old_names_given(data):
        moved.setdefault(new, data[old])
    return moved


class Settings(BaseModel):
    workspace: str = Field(default_factory=lambda: str(default_root()))
    # the fp32 MiniLM on onnxruntime: the torch model's vectors (to float rounding) in less time. `bundled:minilm-int8`
    # (the same model computing in int8) takes a quarter to half of torch's time; it moves one question in 50 on
    # emanual_galaxy, so it is a setting, not the default (RESULTS.md)
    embedder: str = BUNDLED_MINILM_FP32
    embedder_base_url: str = ""  # an OpenAI-compatible embedding server for `openai:<model>`; empty = api.openai.com
    long_text: Literal["truncate", "window"] = "truncate"
    # what tags CHOP's chunks with their CNM: a rule lexicon or the extractor (no model), or a chat model through
    # transformers, llama.cpp or the OpenAI-compatible server
    cnm_backend: Literal["rule", "extract", "local", "llamacpp", "openai"] = "extract"
    # what writes generated answers and questions and LumberChunker's decisions: the bundled SmolLM2 through
    # transformers or llama.cpp, or the OpenAI-compatible server. Settings saved before it had its own field (and
    # a `--cnm-backend` flag alone) take the CNM backend's when that is a chat model: see `_chat_from_cnm`
    chat_backend: Literal["local", "llamacpp", "openai"] = "local"
    # the language model both backends run: a model name on the server (openai), a .gguf (llamacpp), a folder or HF
    # id (local: only where the CNM backend is local too); empty = each backend's default
    model_name: str = ""
    model_server_url: str = ""  # the OpenAI-compatible server of the `openai` backends; empty = api.openai.com
    model_timeout: float = 60.0  # seconds per request to a model server (the chat server's, a /rerank server's)
    scorer_model: str = ""  # causal LM for lg / lgmgc: empty = the bundled SmolLM2, else a folder or HF id
    eos_mode: Literal["eos", "paragraph", "sum"] = "eos"  # which next tokens count as end of text
    scorer_dtype: Literal["float32", "bfloat16"] = "float32"  # transformers engine only
    # what runs the scorer: transformers (torch, the de-quantised checkpoint) or llama.cpp (the GGUF as it is)
    scorer_engine: Literal["transformers", "llamacpp"] = "transformers"
    chroma_server: str = ""  # "host:port"; empty = embedded store in the workspace
    top_k: int = Field(default=5, ge=1, le=50)
    # how every chunker of a comparison is searched (core.store.retrieval.RetrievalSettings). The defaults are the best
    # mean MRR@10 over five sets and five chunkers (`python -m bench.retrieval`, docs/RETRIEVAL.md)
    retrieval: RetrievalMode = "hybrid"
    fusion: Fusion = "rrf"
    lexical_weight: float = Field(default=0.9, ge=0.0, le=1.0)
    # a second stage re-ordering each search's top `rerank_depth` (core.store.rerank): "maxsim" reads each chunk's
    # sentences with the embedder; "model" is the operator's `rerank_model`. maxsim at its default weight is the
    # default: it lifted hit@1 on every set we have and lost no set's hit@10 (`python -m bench.rerank`)
    rerank: RerankerName = "maxsim"
    rerank_depth: int = Field(default=20, ge=1, le=200)
    rerank_weight: float | None = Field(default=None, ge=0.0, le=1.0)  # None: the reranker's own default weight
    rerank_model: str = ""  # a sentence-transformers CrossEncoder folder, or the http(s) URL of a /rerank server
    max_upload_mb: int = Field(default=50, ge=1, le=2048)  # per file; .streamlit/config.toml lets up to 2048 through

    @model_validator(mode="before")
    @classmethod
    def _chat_from_cnm(cls, data: object) -> object:
        """Old names (`RENAMED`) are read as the new ones. Before the chat backend was a field of its own, the CNM
        backend picked it too (`openai` and `llamacpp` for both, `local` otherwise): settings without one keep
        that choice."""
        if not isinstance(data, dict):
            return data
        data = with_new_names(data)
        if "chat_backend" not in data and data.get("cnm_backend") in ("local", "llamacpp", "openai"):
            data["chat_backend"] = data["cnm_backend"]
        return data

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024

    def retrieval_settings(self):
        """The search every chunker gets (a core.store.retrieval.RetrievalSettings)."""
        from core.store.retrieval import RetrievalSettings

        return RetrievalSettings(self.retrieval, self.fusion, self.lexical_weight, rerank=self.rerank,
                                 rerank_depth=self.rerank_depth, rerank_weight=self.rerank_weight)

    def chroma_address(self) -> tuple[str, int] | None:
        return parse_host_port(self.chroma_server)


def parse_host_port(text: str) -> tuple[str, int] | None:
    """`host:port` as (host, port); None for an empty text or one of another shape."""
    host, _, port = text.strip().rpartition(":")
    return (host, int(port)) if host and port.isdigit() else None


def parse_ks(text: str) -> list[int]:
    """Comma-separated cut-offs ("1,3,5") as sorted distinct integers; ValueError unless all are >= 1."""
    ks = sorted({int(x) for x in text.split(",") if x.strip()})
    if not ks or ks[0] < 1:
        raise ValueError("k values must be >= 1")
    return ks


#: every CNM backend a session may name (the `cnm_backend` field's values)
CNM_BACKENDS: tuple[str, ...] = get_args(Settings.model_fields["cnm_backend"].annotation)
#: every chat backend a session may name (the `chat_backend` field's values, each also a CNM backend)
CHAT_BACKENDS: tuple[str, ...] = get_args(Settings.model_fields["chat_backend"].annotation)
#: the operator's fields (core.server_config.ServerConfig names the same ones)
OPERATOR_FIELDS = ("workspace", "chroma_server", "embedder_base_url", "model_server_url", "model_name",
                   "scorer_model", "model_timeout", "max_upload_mb", "rerank_model")
#: where a session sends its documents, questions and key: set by the operator, or typed for one session only
ADDRESS_FIELDS = ("chroma_server", "embedder_base_url", "model_server_url", "rerank_model")
#: what a visitor of a shared server may choose (the embedder only among the operator's `embedders`)
VISITOR_FIELDS = tuple(name for name in Settings.model_fields if name not in OPERATOR_FIELDS)
CHOICES_FILE = "choices.json"


def session_settings(mode: str, config, saved: Settings | None, choices: dict | None = None) -> Settings:
    """The settings a new browser session starts with.

    `config` is the operator's `ServerConfig`, `saved` the server's settings.json (if any), `choices` what this
    visitor saved with their library. Addresses always come from the operator. In `local` mode the rest is the
    saved settings; in `shared` mode the operator's fields come from `config` and a visitor's choices from
    `choices`, else from the saved settings, with the embedder kept among the operator's offer."""
    base = saved or Settings(workspace=config.workspace, embedder=config.embedders[0])
    if mode == "local":
        return base.model_copy(update={name: getattr(config, name) for name in ADDRESS_FIELDS})
    values = {name: getattr(base, name) for name in VISITOR_FIELDS}
    for name, value in with_new_names(choices or {}).items():
        if name in VISITOR_FIELDS:
            values[name] = value
    try:
        chosen = Settings.model_validate(values)
    except ValidationError:  # a choices file from another version: the saved settings' choices instead
        chosen = Settings.model_validate({name: getattr(base, name) for name in VISITOR_FIELDS})
    return visitor_choice(config, chosen, chosen)


def visitor_choice(config, current: Settings, submitted: Settings) -> Settings:
    """`submitted` as a visitor of a shared server may have it: their choices, the operator's fields from
    `config`, and an embedder the operator offers (else the offer's first)."""
    update = {name: getattr(submitted, name) for name in VISITOR_FIELDS}
    update.update({name: getattr(config, name) for name in OPERATOR_FIELDS})
    if update["embedder"] not in config.embedders:
        update["embedder"] = current.embedder if current.embedder in config.embedders else config.embedders[0]
    offered = config.offered_backends("shared", CNM_BACKENDS)
    for name in ("cnm_backend", "chat_backend"):  # a paid backend the operator does not offer (a saved choice, a
        if update[name] not in offered:           # forged form): the current one if offered, else the default
            held = getattr(current, name)
            update[name] = held if held in offered else Settings.model_fields[name].default
    return current.model_copy(update=update)


def without_addresses(settings: Settings) -> Settings:
    """The settings as a browser may save them: no address (see ADDRESS_FIELDS)."""
    return settings.model_copy(update={name: "" for name in ADDRESS_FIELDS})


def save_choices(folder: Path, settings: Settings) -> None:
    """Keep a visitor's choices with their library (`folder`), so reopening its address finds them."""
    from core.infra.storage import write_atomically

    folder.mkdir(parents=True, exist_ok=True)
    choices = {name: getattr(settings, name) for name in VISITOR_FIELDS}
    write_atomically(folder / CHOICES_FILE, json.dumps(choices, indent=2))


def load_choices(folder: Path) -> dict:
    """A visitor's saved choices, {} when there are none or the file is not a JSON object (choices are
    conveniences: a damaged file only means the defaults)."""
    try:
        data = json.loads((folder / CHOICES_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def retrieval_from_flags(mode: str | None, fusion: str | None, weight: str | float | None) -> RetrievalSettings:
    """RetrievalSettings from command-line values, the Settings defaults where a flag is not given; a bad value is
    a ConfigError with one line."""
    from core.infra.errors import ConfigError
    from core.store.retrieval import RetrievalSettings

    defaults = Settings.model_fields
    try:
        w = defaults["lexical_weight"].default if weight is None else float(weight)
    except ValueError as exc:
        raise ConfigError(f"--lexical-weight takes a number between 0 and 1 (got '{weight}')") from exc
    # the names as typed; RetrievalSettings refuses one that is not a mode or fusion with a ConfigError
    return RetrievalSettings(cast(RetrievalMode, mode or defaults["retrieval"].default),
                             cast(Fusion, fusion or defaults["fusion"].default), w)


def settings_path(root: Path | None = None) -> Path:
    return (root or default_root()) / SETTINGS_FILE


@dataclass(frozen=True)
class SettingsLoad:
    """What `load_settings_checked` found: the settings to use, and when the saved file could not be used, one
    line (`problem`) naming it, saying what is wrong and where the damaged file was kept (`kept`)."""

    settings: Settings
    problem: str | None = None
    kept: Path | None = None


class _Damaged(Exception):
    """A settings file that is there but not usable: why, and the settings that can be kept from it (every valid
    field of a JSON object; None when nothing can) with the fields that could not."""

    def __init__(self, reason: str, salvaged: Settings | None = None, bad: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.reason, self.salvaged, self.bad = reason, salvaged, bad


def _validation_reason(exc: ValidationError) -> str:
    errors = exc.errors()
    where = ".".join(str(part) for part in errors[0]["loc"])
    text = f"{where}: {errors[0]['msg']}" if where else "not a JSON object"
    return text + (f"; and {len(errors) - 1} more" if len(errors) > 1 else "")


def _read(path: Path) -> Settings:
    """The settings saved in `path`. OSError when it cannot be read (FileNotFoundError: none saved), `_Damaged`
    when it is not a settings file this version reads."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise _Damaged(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from exc
    except UnicodeDecodeError as exc:
        raise _Damaged("not UTF-8 text") from exc
    except RecursionError:
        raise _Damaged("not valid JSON: nested too deeply") from None
    if isinstance(data, dict):  # old names as the new ones, so a bad value is named, and dropped, by its new name
        data = with_new_names(data)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        reason = _validation_reason(exc)
        if not isinstance(data, dict):
            raise _Damaged(reason) from exc
        bad = tuple(dict.fromkeys(str(e["loc"][0]) for e in exc.errors() if e["loc"]))
        try:
            salvaged = Settings.model_validate({k: v for k, v in data.items() if k not in bad})
        except ValidationError:
            raise _Damaged(reason) from exc
        raise _Damaged(reason, salvaged, bad) from exc


def load_settings_checked(root: Path | None = None) -> SettingsLoad:
    """Saved settings, or the defaults when none are saved; never raises.

    A damaged file (not UTF-8, not JSON, a value out of range or unknown) is moved aside to
    `settings.json.damaged-<UTC time>` (`core.ingest.library.keep_aside`: an earlier kept copy is never
    overwritten), so no later `save_settings` can destroy it. When it was a JSON object its valid fields are kept,
    and saved again (a bad `top_k` does not lose the workspace folder); otherwise the defaults are used. `problem`
    says what happened in one line."""
    from core.ingest.library import keep_aside

    path = settings_path(root)
    try:
        return SettingsLoad(_read(path))
    except FileNotFoundError:
        return SettingsLoad(Settings())
    except OSError as exc:
        return SettingsLoad(Settings(), f"{path}: could not be read ({exc.strerror or exc.__class__.__name__}); "
                                        "using the default settings for now.")
    except _Damaged as exc:
        damage = exc
    if damage.salvaged is not None:
        settings = damage.salvaged
        names = ", ".join(damage.bad)
        consequence = (f"{names} {'is' if len(damage.bad) == 1 else 'are'} back to the default, the other saved "
                       "settings are kept")
    else:
        settings, consequence = Settings(), "using the default settings"
    head = f"{path}: damaged ({damage.reason}); {consequence}"
    try:
        kept = keep_aside(path)
    except OSError as exc:
        return SettingsLoad(settings, f"{head} for now. It could not be kept aside "
                                      f"({exc.strerror or exc.__class__.__name__}), so it is left where it is.")
    if damage.salvaged is not None:
        with suppress(OSError):  # if not saved now, the kept copy still holds them and this session uses them
            save_settings(settings, root)
    return SettingsLoad(settings, f"{head}. The file is kept as {kept.name} in the same folder.", kept)


def load_settings(root: Path | None = None) -> Settings:
    """Saved settings, or the defaults when none are saved; a damaged file is kept aside as `load_settings_checked`
    says (use that to tell the user)."""
    return load_settings_checked(root).settings


def save_settings(settings: Settings, root: Path | None = None) -> Path | None:
    """Write the settings. A settings file there that is damaged (one `load_settings` would not read as it is) is
    kept aside first, as `load_settings_checked` does, rather than replaced: returns where it went, else None."""
    from core.ingest.library import keep_aside

    path = settings_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = None
    try:
        _read(path)
    except _Damaged:
        kept = keep_aside(path)
    except OSError:  # none saved yet, or unreadable: replaced as always
        pass
    from core.infra.storage import write_atomically

    write_atomically(path, settings.model_dump_json(indent=2), durable=True)
    return kept
