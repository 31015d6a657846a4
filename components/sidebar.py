"""The shared sidebar: embedder, LLM backend, store and workspace. Saved settings persist across restarts; an
API key typed here lives only in this browser session's memory and is never shown again or saved."""

from __future__ import annotations

import streamlit as st

from components.state import settings
from core.methods.lgmgc.scoring import DTYPES, EOS_MODES, SCORER_ENGINES
from core.settings import Settings, save_settings


def render() -> None:
    current = settings()
    with st.sidebar.expander("Settings", expanded=False), st.form("settings_form"):
        embedder = st.text_input("Embedder", current.embedder,
                                 help="bundled:minilm-fp32 (the default: all-MiniLM-L6-v2 on onnxruntime), "
                                      "bundled:minilm-int8 (the same model computing in int8: about half the "
                                      "time), bundled:all-MiniLM-L6-v2 (fp32 on torch), a sentence-transformers "
                                      "folder, or openai:<model>")
        embedder_base_url = st.text_input("Embedding server base URL", current.embedder_base_url,
                                          help="for openai:<model> on an OpenAI-compatible server (vLLM, Ollama, "
                                               "llama.cpp, TEI); empty for api.openai.com")
        long_text = st.selectbox("Texts longer than the embedder reads", ["truncate", "window"],
                                 index=["truncate", "window"].index(current.long_text))
        kinds = ["rule", "llamacpp", "local", "openai"]
        llm = st.selectbox("CNM backend (CHOP)", kinds, index=kinds.index(current.llm),
                           format_func={"rule": "rule-based (no model)", "llamacpp": "local SmolLM2 (llama.cpp, JSON)",
                                        "local": "local SmolLM2 (transformers)", "openai": "OpenAI-compatible"}.get)
        llm_model = st.text_input("LLM model", current.llm_model, help="e.g. gpt-4o-mini, llama3.1 (Ollama)")
        llm_base_url = st.text_input("LLM base URL", current.llm_base_url, help="empty for api.openai.com")
        key = st.text_input("API key (this session only)", type="password", value="",
                            help="Kept in memory for this browser session; never saved or shown again.")
        scorer_engine = st.selectbox("LGMGC scorer engine", SCORER_ENGINES,
                                     index=SCORER_ENGINES.index(current.scorer_engine),
                                     format_func={"transformers": "transformers (torch)",
                                                  "llamacpp": "llama.cpp (the GGUF in-process)"}.get)
        scorer_model = st.text_input("LGMGC scorer model", current.scorer_model,
                                     help="empty: the bundled SmolLM2-135M; or a local Hugging Face causal-LM folder "
                                          "(transformers) or a .gguf file (llama.cpp)")
        eos_mode = st.selectbox("LGMGC: end of text means", EOS_MODES, index=EOS_MODES.index(current.eos_mode),
                                format_func={"eos": "end tokens (<|im_end|>, <|endoftext|>)",
                                             "paragraph": "a blank line (new paragraph)", "sum": "either"}.get)
        scorer_dtype = st.selectbox("LGMGC scorer precision", DTYPES, index=DTYPES.index(current.scorer_dtype),
                                    help="transformers engine: bfloat16 is faster on CPUs with AVX-512 BF16")
        chroma = st.text_input("Chroma server (host:port)", current.chroma_server, help="empty: embedded store")
        workspace = st.text_input("Workspace folder", current.workspace)
        top_k = st.number_input("Top k", 1, 50, current.top_k)
        modes = ["hybrid", "dense", "bm25"]
        retrieval = st.selectbox("Retrieval (every chunker alike)", modes, index=modes.index(current.retrieval),
                                 format_func={"hybrid": "hybrid: MiniLM + BM25, fused", "dense": "dense: MiniLM cosine",
                                              "bm25": "bm25: lexical only"}.get,
                                 help="BM25 reads exactly the text that is embedded (CNM or heading prefix + span)")
        fusion = st.selectbox("Hybrid fusion", ["rrf", "weighted"], index=["rrf", "weighted"].index(current.fusion),
                              format_func={"rrf": "reciprocal rank (RRF, k=60)",
                                           "weighted": "weighted sum of min-max scores"}.get)
        lexical_weight = st.slider("Hybrid: lexical weight", 0.0, 1.0, float(current.lexical_weight), 0.05,
                                   help="0 = dense only, 1 = BM25 only")
        max_upload_mb = st.number_input("Upload limit per file (MB)", 1, 2048, current.max_upload_mb,
                                        help="Larger files are refused with a message naming them.")
        if st.form_submit_button("Save settings"):
            new = Settings(workspace=workspace, embedder=embedder, embedder_base_url=embedder_base_url.strip(),
                           long_text=long_text, llm=llm,
                           llm_model=llm_model, llm_base_url=llm_base_url, llm_timeout=current.llm_timeout,
                           scorer_model=scorer_model, eos_mode=eos_mode, scorer_dtype=scorer_dtype,
                           scorer_engine=scorer_engine,
                           chroma_server=chroma, top_k=int(top_k), max_upload_mb=int(max_upload_mb),
                           retrieval=retrieval, fusion=fusion, lexical_weight=float(lexical_weight))
            if key:
                st.session_state["api_key"] = key
            st.session_state["settings"] = new
            save_settings(new)
            st.rerun()
    s = settings()
    key_note = "key set" if st.session_state.get("api_key") else "no key"
    st.sidebar.caption(f"Embedder: {s.embedder} ({s.long_text}) · CNM: {s.llm}"
                       + (f" ({key_note})" if s.llm == "openai" else "")
                       + f" · Store: {s.chroma_server or 'embedded'}"
                       + f" · Retrieval: {s.retrieval}"
                       + (f" ({s.fusion}, lexical weight {s.lexical_weight:g})" if s.retrieval == "hybrid" else ""))
