"""The shared sidebar: this session's settings.

On a `local` server (one user on loopback) every setting is editable; addresses typed here last for this browser
session only, the rest is saved for the next start. On a `shared` server a visitor picks among what the operator
offers (retrieval, k, fusion, backends, chunker-side options) and sees the operator's settings read-only; the
choices are kept with the visitor's library. An API key typed here lives only in this session's memory.
See docs/SECURITY.md.
"""

from __future__ import annotations

import streamlit as st

from components import state
from components.html import md_escape, retrieval_text
from core.infra.urls import redact_url
from core.methods.lgmgc.scoring import DTYPES, EOS_MODES, SCORER_ENGINES
from core.settings import CHAT_BACKENDS, Settings, save_choices, save_settings, visitor_choice, without_addresses
from core.store.embeddings import BUNDLED_MINILM_INT8
from core.workbench import fast_embedding_cost

_LLM_LABELS = {"extract": "extractor that learns the library (no model)", "rule": "rule-based lexicon (no model)",
               "llamacpp": "local SmolLM2 (llama.cpp, JSON)",
               "local": "local SmolLM2 (transformers)", "openai": "OpenAI-compatible"}
_RETRIEVAL_LABELS = {"hybrid": "hybrid: MiniLM + BM25, fused", "dense": "dense: MiniLM cosine",
                     "bm25": "bm25: lexical only"}
_FUSION_LABELS = {"rrf": "reciprocal rank (RRF, k=60)", "weighted": "weighted sum of min-max scores"}
_RERANK_LABELS = {"none": "none", "maxsim": "sentence max-sim (each chunk's best sentence, no extra model)",
                  "model": "the operator's reranker (CrossEncoder folder or /rerank server)"}
_EMBEDDER_HELP = ("bundled:minilm-fp32 (the default: all-MiniLM-L6-v2 on onnxruntime), bundled:minilm-int8 (the "
                  "same model computing in int8: about half the time), bundled:all-MiniLM-L6-v2 (fp32 on torch), a "
                  "sentence-transformers folder, or openai:<model>")


def _fast_help() -> str:
    """The fast setting's help: what it is, and what it costs by the committed embedder study."""
    cost = fast_embedding_cost()
    return ("bundled:minilm-int8: the default MiniLM computing in int8, about half the embedding time; vectors and "
            "collections are kept apart from the default's. " + (md_escape(cost) if cost else ""))


def _choice(label: str, options: list[str] | tuple[str, ...], value: str, **kwargs) -> str:
    options = list(options)
    return st.selectbox(label, options, index=options.index(value) if value in options else 0, **kwargs)


def _visitor_fields(current: Settings, embedders: list[str] | None, llms: list[str]) -> dict:
    """The widgets every mode shows; `embedders` limits the embedder to a list (shared), None lets it be typed;
    `llms` are the CNM backends this server offers (a shared one hides paid backends unless its operator offers
    them)."""
    values: dict = {}
    if embedders is None:
        fast = st.toggle("Fast embedding (int8)", current.embedder == BUNDLED_MINILM_INT8, help=_fast_help())
        if fast:  # the same MiniLM computing in int8: about half the embedding time (RESULTS.md)
            values["embedder"] = BUNDLED_MINILM_INT8
        else:
            typed = current.embedder if current.embedder != BUNDLED_MINILM_INT8 else Settings().embedder
            values["embedder"] = st.text_input("Embedder", typed, help=_EMBEDDER_HELP)
    else:
        values["embedder"] = _choice("Embedder", embedders, current.embedder, help="offered by this server")
    values["long_text"] = _choice("Texts longer than the embedder reads", ["truncate", "window"], current.long_text)
    values["cnm_backend"] = _choice("CNM backend (CHOP)", llms, current.cnm_backend, format_func=_LLM_LABELS.get)
    values["chat_backend"] = _choice("Chat model (answers, generated questions, LumberChunker)",
                                     [c for c in llms if c in CHAT_BACKENDS], current.chat_backend,
                                     format_func=_LLM_LABELS.get)
    values["scorer_engine"] = _choice("LGMGC scorer engine", SCORER_ENGINES, current.scorer_engine,
                                      format_func={"transformers": "transformers (torch)",
                                                   "llamacpp": "llama.cpp (the GGUF in-process)"}.get)
    values["eos_mode"] = _choice("LGMGC: end of text means", EOS_MODES, current.eos_mode,
                                 format_func={"eos": "end tokens (<|im_end|>, <|endoftext|>)",
                                              "paragraph": "a blank line (new paragraph)", "sum": "either"}.get)
    values["scorer_dtype"] = _choice("LGMGC scorer precision", DTYPES, current.scorer_dtype,
                                     help="transformers engine: bfloat16 is faster on CPUs with AVX-512 BF16")
    values["top_k"] = int(st.number_input("Top k", 1, 50, current.top_k))
    values["retrieval"] = _choice("Retrieval (every chunker alike)", list(_RETRIEVAL_LABELS), current.retrieval,
                                  format_func=_RETRIEVAL_LABELS.get,
                                  help="BM25 reads exactly the text that is embedded (CNM or heading prefix + span)")
    values["fusion"] = _choice("Hybrid fusion", list(_FUSION_LABELS), current.fusion, format_func=_FUSION_LABELS.get)
    values["lexical_weight"] = float(st.slider("Hybrid: lexical weight", 0.0, 1.0, float(current.lexical_weight),
                                               0.05, help="0 = dense only, 1 = BM25 only"))
    values["rerank"] = _choice("Rerank the top hits", list(_RERANK_LABELS), current.rerank,
                               format_func=_RERANK_LABELS.get,
                               help="A second stage re-orders each search's first hits (docs/RETRIEVAL.md).")
    values["rerank_depth"] = int(st.number_input("Rerank: how many first hits", 1, 200, current.rerank_depth))
    return values


def _key_field() -> str:
    return st.text_input("API key (this session only)", type="password", value="",
                         help="Kept in memory for this browser session; never saved or shown again. It is sent only "
                              "to the base URL this session uses.")


def _local_form(current: Settings) -> None:
    with st.sidebar.expander("Settings", expanded=False), st.form("settings_form"):
        values = _visitor_fields(current, None, list(_LLM_LABELS))
        values["embedder_base_url"] = st.text_input(
            "Embedding server base URL", current.embedder_base_url,
            help="for openai:<model> on an OpenAI-compatible server (vLLM, Ollama, llama.cpp, TEI); empty for "
                 "api.openai.com. Typed here, it lasts for this browser session (set CHUNKLENS_EMBEDDER_BASE_URL "
                 "to keep it); the server's OPENAI_API_KEY is never sent to it.")
        values["model_name"] = st.text_input("LLM model", current.model_name,
                                             help="e.g. gpt-4o-mini, llama3.1 (Ollama), or a GGUF / model folder")
        values["model_server_url"] = st.text_input(
            "LLM base URL", current.model_server_url,
            help="empty for api.openai.com. Typed here, it lasts for this browser session (set "
                 "CHUNKLENS_MODEL_SERVER_URL to keep it); the server's OPENAI_API_KEY is never sent to it.")
        key = _key_field()
        values["scorer_model"] = st.text_input(
            "LGMGC scorer model", current.scorer_model,
            help="empty: the bundled SmolLM2-135M; or a local Hugging Face causal-LM folder (transformers) or a "
                 ".gguf file (llama.cpp)")
        values["rerank_model"] = st.text_input(
            "Reranker (for 'the operator's reranker')", current.rerank_model,
            help="a sentence-transformers CrossEncoder folder, or the URL of a /rerank server (TEI, vLLM, Jina, "
                 "llama.cpp). Typed here, it lasts for this browser session (set CHUNKLENS_RERANK_MODEL to keep it).")
        values["chroma_server"] = st.text_input("Chroma server (host:port)", current.chroma_server,
                                                help="empty: embedded store. Typed here, it lasts for this session.")
        values["workspace"] = st.text_input("Workspace folder", current.workspace)
        values["max_upload_mb"] = int(st.number_input("Upload limit per file (MB)", 1, 2048, current.max_upload_mb,
                                                      help="Larger files are refused with a message naming them."))
        if st.form_submit_button("Save settings"):
            values = {k: v.strip() if isinstance(v, str) else v for k, v in values.items()}
            new = current.model_copy(update=values)
            if key:
                st.session_state["api_key"] = key
            st.session_state["settings"] = Settings.model_validate(new.model_dump())
            save_settings(without_addresses(new))
            st.rerun()


def _shared_form(current: Settings) -> None:
    config = state.server_config()
    with st.sidebar.expander("Settings", expanded=False):
        with st.form("settings_form"):
            values = _visitor_fields(current, config.embedders, config.offered_backends("shared", tuple(_LLM_LABELS)))
            key = _key_field()
            if st.form_submit_button("Save settings"):
                new = visitor_choice(config, current, current.model_copy(update=values))
                if key:
                    st.session_state["api_key"] = key
                st.session_state["settings"] = new
                save_choices(state.library().root, new)
                st.rerun()
        st.caption("Set by the server's operator (docs/SECURITY.md): "
                   + "; ".join(f"{name}: {md_escape(value)}" for name, value in config.describe().items()))


def render() -> None:
    current = state.settings()
    (_local_form if state.mode() == "local" else _shared_form)(current)
    s = state.settings()
    key_note = "key set" if st.session_state.get("api_key") else "no key"
    # the embedder and the store are free text (a file or a saved setting may hold Markdown): escaped
    st.sidebar.caption(
        f"Embedder: {md_escape(s.embedder)} ({s.long_text}) · CNM: {s.cnm_backend} · chat: {s.chat_backend}"
        + (f" ({key_note})" if "openai" in (s.cnm_backend, s.chat_backend) else "")
        + f" · Store: {md_escape(redact_url(s.chroma_server)) or 'embedded'} · Retrieval: "
        + retrieval_text(s.retrieval_settings()) + f" · {state.mode()} server")
