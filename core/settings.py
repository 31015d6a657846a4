"""App settings, validated, persisted as JSON in the workspace root.

An API key is never part of the settings: it comes from the environment or is typed into the app for the
current browser session only, and is never written anywhere.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from core.store.embeddings import BUNDLED_MINILM
from core.workspace import default_root

SETTINGS_FILE = "settings.json"


class Settings(BaseModel):
    workspace: str = Field(default_factory=lambda: str(default_root()))
    embedder: str = BUNDLED_MINILM
    long_text: Literal["truncate", "window"] = "truncate"
    llm: Literal["rule", "local", "openai"] = "rule"
    llm_model: str = ""
    llm_base_url: str = ""
    llm_timeout: float = 60.0
    scorer_model: str = ""  # causal LM for lg / lgmgc: empty = the bundled SmolLM2, else a folder or HF id
    eos_mode: Literal["eos", "paragraph", "sum"] = "eos"  # which next tokens count as end of text
    scorer_dtype: Literal["float32", "bfloat16"] = "float32"
    chroma_server: str = ""  # "host:port"; empty = embedded store in the workspace
    top_k: int = Field(default=5, ge=1, le=50)
    # how every chunker of a comparison is searched (core.store.retrieval.RetrievalSettings). The defaults are the best
    # mean MRR@10 over five sets and five chunkers (`python -m bench.retrieval`, docs/RETRIEVAL.md)
    retrieval: Literal["dense", "bm25", "hybrid"] = "hybrid"
    fusion: Literal["rrf", "weighted"] = "rrf"
    lexical_weight: float = Field(default=0.9, ge=0.0, le=1.0)
    max_upload_mb: int = Field(default=50, ge=1, le=2048)  # per file; .streamlit/config.toml lets up to 2048 through

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024

    def retrieval_settings(self):
        """The search every chunker gets (a core.store.retrieval.RetrievalSettings)."""
        from core.store.retrieval import RetrievalSettings

        return RetrievalSettings(self.retrieval, self.fusion, self.lexical_weight)

    def chroma_address(self) -> tuple[str, int] | None:
        if not self.chroma_server.strip():
            return None
        host, _, port = self.chroma_server.strip().rpartition(":")
        return (host, int(port)) if host and port.isdigit() else None


def retrieval_from_flags(mode: str | None, fusion: str | None, weight: str | float | None):
    """RetrievalSettings from command-line values, the Settings defaults where a flag is not given; a bad value is
    a ConfigError with one line."""
    from core.errors import ConfigError
    from core.store.retrieval import RetrievalSettings

    defaults = Settings.model_fields
    try:
        w = defaults["lexical_weight"].default if weight is None else float(weight)
    except ValueError as exc:
        raise ConfigError(f"--lexical-weight takes a number between 0 and 1 (got '{weight}')") from exc
    return RetrievalSettings(mode or defaults["retrieval"].default, fusion or defaults["fusion"].default, w)


def settings_path(root: Path | None = None) -> Path:
    return (root or default_root()) / SETTINGS_FILE


def load_settings(root: Path | None = None) -> Settings:
    """Saved settings, or the defaults when none are saved or the file is damaged."""
    path = settings_path(root)
    try:
        return Settings.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError):
        return Settings()


def save_settings(settings: Settings, root: Path | None = None) -> None:
    path = settings_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(settings.model_dump_json(indent=2), encoding="utf-8")
    tmp.replace(path)
