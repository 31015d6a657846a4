"""What whoever starts the server decides, and a visitor in the browser cannot change.

A ChunkLens server may be shared: one process, several browsers. Anything that says where data or keys go, where
files live or how much a visitor may upload is the operator's: the workspace, the Chroma address, the base URLs
of OpenAI-compatible servers, model paths, the upload limit and the embedders visitors may pick. It comes from a
TOML file (`$CHUNKLENS_CONFIG`, else `server.toml` in the default workspace folder) and from environment
variables, which win over the file. The command line is the operator too (`core.__main__`).

The mode says who the browser's user is. `local`: one person on their own machine, who may edit every setting in
the sidebar (addresses typed there last for that browser session only). `shared`: many visitors, who choose only
among what the operator offers. `auto`, the default, is `local` when the server listens on loopback only and
`shared` otherwise. docs/SECURITY.md has the whole threat model.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from core.infra.clients import trusted_networks
from core.infra.errors import ConfigError
from core.infra.urls import redact_url
from core.infra.workspace import default_root
from core.settings import RENAMED, old_names_given, with_new_names
from core.store.embeddings import BUNDLED_MINILM_FP32, BUNDLED_MINILM_INT8

CONFIG_FILE = "server.toml"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
#: what the embedder field offers a shared server's visitors when the operator names no list (all run offline)
BUNDLED_EMBEDDERS = (BUNDLED_MINILM_FP32, BUNDLED_MINILM_INT8, "bundled:all-MiniLM-L6-v2")
#: environment variable -> field; each wins over the config file
ENVIRONMENT = {
    "CHUNKLENS_MODE": "mode",
    "CHUNKLENS_WORKSPACE": "workspace",
    "CHUNKLENS_CHROMA_SERVER": "chroma_server",
    "CHUNKLENS_EMBEDDER_BASE_URL": "embedder_base_url",
    "CHUNKLENS_MODEL_SERVER_URL": "model_server_url",
    "CHUNKLENS_MODEL_NAME": "model_name",
    "CHUNKLENS_SCORER_MODEL": "scorer_model",
    "CHUNKLENS_MAX_UPLOAD_MB": "max_upload_mb",
    "CHUNKLENS_RERANK_MODEL": "rerank_model",
    "CHUNKLENS_MAX_SESSION_UPLOAD_MB": "max_session_upload_mb",
    "CHUNKLENS_OFFER_PAID_BACKENDS": "offer_paid_backends",
    "CHUNKLENS_LLM_REQUESTS_PER_RUN": "llm_requests_per_run",
    "CHUNKLENS_LLM_REQUESTS_PER_HOUR": "llm_requests_per_hour",
    "CHUNKLENS_MAX_BENCH_QUESTIONS": "max_bench_questions",
    "CHUNKLENS_MAX_LIBRARY_TEXT_MB": "max_library_text_mb",
    "CHUNKLENS_READER_WORKERS": "reader_workers",
    "CHUNKLENS_TRUSTED_PROXIES": "trusted_proxies",
}
#: the old names of two variables -> their field; each read only when the field's variable above is not set
OLD_ENVIRONMENT = {"CHUNKLENS_LLM_BASE_URL": "model_server_url", "CHUNKLENS_LLM_MODEL": "model_name"}
#: backends (CNM or chat) whose requests go to a server that may bill the operator's key
PAID_BACKENDS = ("openai",)


class ServerConfig(BaseModel):
    """The operator's settings. Field names match `core.settings.Settings`, whose values they supply."""

    model_config = {"extra": "forbid"}

    mode: Literal["auto", "local", "shared"] = "auto"
    workspace: str = Field(default_factory=lambda: str(default_root()))
    chroma_server: str = ""
    embedder_base_url: str = ""
    #: the OpenAI-compatible server of the `openai` CNM and chat backends, and the model they (and the local ones) run
    model_server_url: str = ""
    model_name: str = ""
    scorer_model: str = ""
    model_timeout: float = Field(default=60.0, gt=0, le=3600)
    max_upload_mb: int = Field(default=50, ge=1, le=2048)
    #: all uploads one browser session may hold on a shared server at once, submitted or not (components.upload_cap)
    max_session_upload_mb: int = Field(default=200, ge=1, le=16384)
    #: the most text one library may hold, in MB of its documents' extracted text (UTF-8), checked whenever
    #: documents are added (core.ingest.library.shelf.MAX_LIBRARY_TEXT_BYTES is the default)
    max_library_text_mb: int = Field(default=200, ge=1, le=65536)
    rerank_model: str = ""  # a CrossEncoder folder or a /rerank URL, for the "model" reranker
    #: the embedders a shared server's visitors may pick from (the first is the default)
    embedders: list[str] = Field(default_factory=lambda: list(BUNDLED_EMBEDDERS), min_length=1)
    #: whether a shared server's visitors may pick a paid CNM or chat backend (PAID_BACKENDS); a local user always may
    offer_paid_backends: bool = False
    #: paid LLM requests one script run of a shared server may send (core.llm.budget)
    llm_requests_per_run: int = Field(default=100, ge=1, le=100_000)
    #: paid requests (LLM questions, embedding batches, rerank calls) one client may send per hour on a shared
    #: server, counted by client address (core.infra.clients); 0: no hourly limit
    llm_requests_per_hour: int = Field(default=500, ge=0, le=1_000_000)
    #: questions one benchmark scores on a shared server (core.workbench.capped_questions picks them); 0: all
    max_bench_questions: int = Field(default=1000, ge=0, le=1_000_000)
    #: reader workers (core.ingest.worker, up to 1 GB each) alive at once in the server process, half of them at
    #: most for one client (core.ingest.reader_pool)
    reader_workers: int = Field(default=2, ge=1, le=64)
    #: proxies in front of the server whose X-Forwarded-For names the client (addresses or networks; the
    #: environment variable takes them comma-separated); none: the connection's own address is the client
    trusted_proxies: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _new_names(cls, data: object) -> object:
        """The settings' old names (`core.settings.RENAMED`: `llm_base_url`, `llm_model`, `llm_timeout`) read as
        the new ones; both names of one setting is an error, since either could be meant."""
        if not isinstance(data, dict):
            return data
        for old, new in old_names_given(data):
            if new in data:
                raise ValueError(f"{old} and {new} name the same setting ({new} is its name now): give one")
        return with_new_names(data)

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxies(cls, value: object) -> object:
        entries = [p for p in value.split(",") if p.strip()] if isinstance(value, str) else value
        if isinstance(entries, list):
            trusted_networks(str(p) for p in entries)  # a bad entry is a ValueError naming it
            return [str(p).strip() for p in entries]
        return entries

    def bench_question_cap(self, mode: str) -> int | None:
        """How many questions one benchmark may score in `mode`: the operator's cap on a shared server, where
        every question costs the one process a search per chunker and its memory; none for a local user."""
        return (self.max_bench_questions or None) if mode == "shared" else None

    def offered_backends(self, mode: str, kinds: tuple[str, ...]) -> list[str]:
        """The CNM or chat backends among `kinds` a session in `mode` may pick: paid ones on a shared server only
        when the operator offers them, since each request spends the operator's key."""
        if mode == "local" or self.offer_paid_backends:
            return list(kinds)
        return [k for k in kinds if k not in PAID_BACKENDS]

    def describe(self) -> dict[str, str]:
        """The settings as a visitor may see them: addresses without their credentials."""
        return {"workspace": self.workspace, "Chroma": redact_url(self.chroma_server) or "embedded",
                "embedding server": redact_url(self.embedder_base_url) or "api.openai.com (if used)",
                "LLM server": redact_url(self.model_server_url) or "api.openai.com (if used)",
                "LLM model": self.model_name or "the backend's default",
                "LGMGC scorer model": self.scorer_model or "bundled SmolLM2-135M",
                "reranker": redact_url(self.rerank_model) or "none configured",
                "upload limit": f"{self.max_upload_mb} MB per file, {self.max_session_upload_mb} MB per visitor",
                "library text limit": f"{self.max_library_text_mb} MB of text per library",
                "paid LLM backends": (f"offered, {self.llm_requests_per_run} requests per run"
                                      if self.offer_paid_backends else "not offered"),
                "paid requests (LLM, embedding, rerank)": f"{self.llm_requests_per_hour or 'no limit'} per visitor "
                                                          "per hour",
                "file readers": f"{self.reader_workers} at once",
                "benchmark questions": (f"at most {self.max_bench_questions:,} per benchmark"
                                        if self.max_bench_questions else "no limit")}


def config_path() -> Path:
    return Path(os.environ.get("CHUNKLENS_CONFIG") or default_root() / CONFIG_FILE)


def load_server_config(path: Path | None = None, environ: dict[str, str] | None = None) -> ServerConfig:
    """The operator's settings: the file (none is fine), then the environment. A file that is not valid TOML or
    holds an unknown or bad value is a ConfigError with one line: a server should not start on a guess."""
    path = path or config_path()
    env = os.environ if environ is None else environ
    values: dict = {}
    try:
        values = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: could not be read ({exc.__class__.__name__})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
    given = {field: env[name].strip() for name, field in (*OLD_ENVIRONMENT.items(), *ENVIRONMENT.items())
             if env.get(name, "").strip()}  # a variable's new name, listed last, wins over its old one
    values = {k: v for k, v in values.items() if RENAMED.get(k, k) not in given}  # the file's, by either name
    values.update(given)
    try:
        return ServerConfig.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        where = f"{where}: " if where else ""
        raise ConfigError(f"{path} or its environment variables: {where}{err['msg']}") from None


def resolve_mode(config: ServerConfig, bound_address: str | None) -> Literal["local", "shared"]:
    """`local` or `shared`: the operator's choice, else `local` only when the server listens on loopback alone."""
    if config.mode != "auto":
        return config.mode
    host = (bound_address or "").strip()
    return "local" if host in LOOPBACK_HOSTS or host.startswith("127.") else "shared"
