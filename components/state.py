"""Session glue: the library id in the URL, settings, cached services, the current corpus and chunk runs.

Nothing here chunks or retrieves; it only decides which `core` objects this browser session is using.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import streamlit as st

from components.clients import this_client
from components.html import md_escape
from core.infra.clients import start_client
from core.infra.errors import ChunkLensError, ConfigError, StoreError
from core.infra.keys import KeyRing
from core.infra.workspace import Workspace
from core.ingest import reader_pool
from core.ingest.library import Library, new_library_id, valid_library_id
from core.llm.budget import RequestBudget, start_budget
from core.pipeline import corpus_fingerprint
from core.server_config import ServerConfig, load_server_config, resolve_mode
from core.services import MAX_CACHED_SERVICES, Services, build_services
from core.settings import Settings, load_choices, load_settings_checked, session_settings, settings_path
from core.workbench import MAX_SPECS_SHARED, Corpus, make_corpus, restore_runs


def through_app() -> None:
    """Make sure a page runs inside app.py's navigation (sidebar, settings, library id).

    Streamlit starts every server in its old multipage mode when a `pages/` folder exists, and leaves it only once
    some session runs app.py's `st.navigation`. So the first visitor after a start who opens a page's own address
    (/documents?lib=...) got that file run on its own, under Streamlit's generated navigation. A page that finds
    itself run that way switches the server to app.py's navigation and reruns, which lands on the same page
    (matched by its url_path) the proper way. Streamlit (1.67) offers no public switch for this: its
    `PagesManager` decides from `pages/` existing beside the entry file, and its advice is to rename the folder,
    which the project's layout keeps. Hence the class flag, read defensively: a Streamlit without it skips this.
    AppTest resets that flag before every run and has no address (`st.context.url`), so there the page just runs.
    Either way the page's run starts with its client's limits (`start_run_limits`).
    """
    from streamlit.runtime.pages_manager import PagesManager

    start_run_limits()
    if getattr(PagesManager, "uses_pages_directory", None) and st.context.url:
        PagesManager.uses_pages_directory = False
        st.rerun()


def problems() -> list[str]:
    """Lines about damaged files met while loading this session's settings and library (each file was kept aside,
    see `core.settings.load_settings_checked` and `Library.problems`); kept for the session until dismissed."""
    return st.session_state.setdefault("load_problems", [])


def _note(lines: list[str]) -> None:
    shown = problems()
    shown.extend(line for line in lines if line not in shown)


def server_config() -> ServerConfig:
    """The operator's settings (core.server_config), read once per browser session. A bad config file stops the
    page with its one line: guessing would be worse on a shared server."""
    try:
        if "server_config" not in st.session_state:
            st.session_state["server_config"] = load_server_config()
        return st.session_state["server_config"]
    except ConfigError as exc:
        st.error(f"The server's configuration cannot be used: {md_escape(str(exc))}")
        st.stop()
        raise


def mode() -> str:
    """`local` (one user, who may edit every setting) or `shared` (visitors choose among the operator's offer)."""
    return resolve_mode(server_config(), st.get_option("server.address"))


def max_specs() -> int | None:
    """How many chunkers one run may ask for: bounded on a shared server (core.workbench.MAX_SPECS_SHARED), where
    every visitor's runs fill the one workspace; unbounded for a local server's one user."""
    return MAX_SPECS_SHARED if mode() == "shared" else None


def _library_root(config: ServerConfig) -> Path | None:
    lib_id = st.query_params.get("lib")
    return Workspace.open(config.workspace).uploads / lib_id if valid_library_id(lib_id) else None


def hide_error_details() -> None:
    """On a shared server an uncaught error shows visitors its type only: a traceback or an error's message
    names the server's folders and code. The whole error still goes to the server's log. A local user keeps the
    details (the option is the process's, and a process serves one mode)."""
    if mode() == "shared":
        st.set_option("client.showErrorDetails", "type")


def settings() -> Settings:
    """This session's settings: made once per session (core.settings.session_settings), then changed only by
    this session's sidebar. No other session's choices reach them."""
    if "settings" not in st.session_state:
        config = server_config()
        saved = settings_path().exists()
        loaded = load_settings_checked()
        if loaded.problem:
            _note([loaded.problem])
        root = _library_root(config) if mode() == "shared" else None
        choices = load_choices(root) if root else None
        st.session_state["settings"] = session_settings(mode(), config, loaded.settings if saved else None, choices)
    return st.session_state["settings"]


def show_problems() -> None:
    """Check this session's library (a damaged stored text or QA set file is kept aside and left out, the rest
    loads) and show every line `problems` holds as a warning, with a button that dismisses them. app.py calls it
    on every run, before the page, so the lines show on whichever page first loaded the damaged file."""
    _note(library().check())
    lines = problems()
    for line in lines:  # file names and paths, which may hold Markdown characters
        st.warning(md_escape(line))
    if lines and st.button("Dismiss these messages", key="dismiss_load_problems"):
        lines.clear()
        st.rerun()


def keys() -> KeyRing:
    """Which key goes where for this session: the server's key only to the operator's base URLs, the key typed
    in this session only where this session points (core.infra.keys)."""
    config = server_config()
    return KeyRing.operator([config.embedder_base_url, config.model_server_url, config.rerank_model],
                            session_key=st.session_state.get("api_key") or None)


@st.cache_resource(show_spinner="Loading models and stores…", max_entries=MAX_CACHED_SERVICES)
def _services(settings_json: str, key_digest: str, _keys: KeyRing) -> Services:
    return build_services(Settings.model_validate_json(settings_json), _keys)


#: settings that steer only uploads and how runs are searched, not the services or the chunks: changing them must
#: not reload models or drop runs (pages pass them to `core.workbench` with each call)
_NOT_SERVICES = {"max_upload_mb", "top_k", "retrieval", "fusion", "lexical_weight", "rerank", "rerank_depth",
                 "rerank_weight"}


def services() -> Services | None:
    """The embedder, store and LLM backend for the current settings (shared by sessions with equal settings)."""
    ring = keys()
    try:  # the keys themselves are never a cache label, only a digest of them
        return _services(settings().model_dump_json(exclude=_NOT_SERVICES), ring.digest_part(), ring)
    except StoreError as exc:
        st.error(f"Vector store unavailable: {md_escape(str(exc))}. Your documents and settings are kept; chunking "
                 "and questions work again once the store answers (reload the page).")
        return None
    except ChunkLensError as exc:
        st.error(f"Settings problem: {md_escape(str(exc))}")
        return None


def start_run_limits() -> None:
    """Put this script run under its client's limits: app.py calls it for every run, and each page (through
    `through_app`) for a run of the page on its own. On a shared server the run works for this session's client
    (by address, components.clients) and gets its own allowance of paid requests (`llm_budget`); in either mode it
    takes file readers from the process's pool at the operator's size, and shows a line when a file waits for one."""
    config = server_config()
    start_client(client() if mode() == "shared" else None)  # a local server's one user may use every reader
    start_budget(llm_budget())
    reader_pool.configure(config.reader_workers)
    reader_pool.start_waiting_notice(_show_waiting)


def _show_waiting(line: str) -> None:
    """A file's line while it waits for a reader (core.ingest.reader_pool), as a note on the page."""
    st.info(md_escape(line))


def client() -> str:
    """Who this session is for the server's limits: its connection's address (through the operator's trusted
    proxies), never the session or the library, which a visitor makes more of for free."""
    return this_client(server_config().trusted_proxies)


def llm_budget() -> RequestBudget | None:
    """This script run's allowance of paid requests on a shared server (the operator's per-run limit, and the
    hour counted per client); None on a local server, whose user pays for their own requests."""
    if mode() != "shared":
        return None
    config = server_config()
    return RequestBudget(config.llm_requests_per_run, visitor=client(), per_hour=config.llm_requests_per_hour)


def retrieval():
    """How this comparison searches every chunker (the sidebar's retrieval settings)."""
    return settings().retrieval_settings()


def workspace() -> Workspace:
    return Workspace.open(settings().workspace)


def library() -> Library:
    """This session's library; its id lives in the URL (?lib=...) so a reload or a restart finds it again."""
    asked = st.query_params.get("lib")
    if valid_library_id(asked):
        lib_id = asked
    else:
        lib_id = st.session_state.get("lib_id") or new_library_id()
        st.query_params["lib"] = lib_id
    st.session_state["lib_id"] = lib_id
    return Library(workspace().uploads, lib_id, max_text_bytes=server_config().max_library_text_mb * 2**20)


def corpus() -> Corpus:
    lib = library()
    if "joined" not in st.session_state:  # a new session on this library: as it was last chunked
        last = lib.last_run()
        st.session_state["joined"] = bool(last and last[1])
    return make_corpus(lib.documents(), lib.dataset(), st.session_state["joined"])


def corpus_key(c: Corpus) -> str:
    """This corpus under these service settings: a session's runs are kept for exactly this key."""
    services = settings().model_dump_json(exclude=_NOT_SERVICES)
    return hashlib.sha256(f"{services}|{corpus_fingerprint(c.documents)}".encode()).hexdigest()[:16]


def runs(c: Corpus) -> dict:
    """Chunk runs for this exact corpus and settings: this session's, or else the library's last run restored
    from the workspace's caches (a reload, a new tab or a restart shows the last results without rerunning)."""
    stored = st.session_state.get("runs")
    if stored and stored.get("key") == corpus_key(c):
        return stored["results"]
    last = library().last_run()
    svc = services() if last and c.documents else None
    if last is None or svc is None or last[1] != st.session_state.get("joined", False):
        return {}
    with st.spinner("Restoring the last results from the workspace…"):
        results = restore_runs(svc, c, last[0])
    if results:
        st.session_state.setdefault("specs", last[0])
        st.session_state["runs"] = {"key": corpus_key(c), "results": results}
    return results


def store_runs(c: Corpus, results: dict) -> None:
    """Keep a run for this session and remember its chunkers in the library for later sessions."""
    st.session_state["runs"] = {"key": corpus_key(c), "results": results}
    library().remember_run(list(results), st.session_state.get("joined", False))
