"""Shared fixtures: a throwaway workspace, the real bundled MiniLM embedder, the sample set's vectors computed once
per run (`sample_vectors`, `app_workspace`: tests.support.world), and ../shared/data when present.

Tests that need ../shared/data (marked `data`, or reaching a data set through `tests.support.data.shared_dataset`)
skip when it is missing, with a reason naming what is missing; on CI (the environment variable CI is "true") a
missing data set fails them instead, so a CI run cannot pass by skipping what it was meant to check.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import core.catalog  # noqa: E402, F401  (the composition root: every chunker, method and service)
from tests.support import data  # noqa: E402


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`--dist loadgroup`), the tests that share one server run in one worker, so the server
    starts once: the browser tests (one Streamlit app and one chromium) and the tests of the shared llama.cpp
    server (tests/integration/conftest.py)."""
    for item in items:
        if "browser" in item.path.relative_to(data.ROOT / "tests").parts[:1]:
            item.add_marker(pytest.mark.xdist_group("browser"))
        elif "llama" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("llama"))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked `data` needs ../shared/data: skipped without it, a failure on CI."""
    if item.get_closest_marker("data") is not None and not data.SHARED_DATA.is_dir():
        data.missing_shared_data(f"the shared data folder {data.SHARED_DATA} is missing")


@pytest.fixture(scope="session")
def minilm():
    """The real bundled all-MiniLM-L6-v2 (loaded once per test session)."""
    from core.store.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture(scope="session")
def cached_minilm(minilm, tmp_path_factory):
    from core.store.embeddings import CachedEmbedder, EmbeddingCache

    return CachedEmbedder(minilm, EmbeddingCache(tmp_path_factory.mktemp("emb") / "embeddings.sqlite"))


@pytest.fixture()
def workspace(tmp_path):
    from core.infra.workspace import Workspace

    return Workspace.open(tmp_path / "ws")


@pytest.fixture(scope="session")
def sample_vectors(tmp_path_factory) -> Path:
    """The sample set's vectors under the default settings (one cold guided demo and the default chunkers on the
    separate manuals), computed once per test run; `app_workspace` copies them into a test's workspace."""
    from tests.support.world import shared_sample_vectors

    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # set in each pytest-xdist worker, the same for one run
    # pytest-xdist's workers' base folders share a parent: the first worker builds the template there, the others
    # reuse it; one process builds it in its own folder
    folder = (tmp_path_factory.getbasetemp().parent / f"sample-vectors-{run}" if run
              else tmp_path_factory.mktemp("sample-vectors"))
    return shared_sample_vectors(folder)


@pytest.fixture(scope="session")
def warm_embedder(tmp_path_factory, sample_vectors):
    """The app's default embedder (MiniLM fp32 on onnxruntime) behind its own copy of the sample set's vectors: the
    sample set's sentences and chunks come from the cache, any other text is embedded."""
    from core.store.embedders import make_embedder
    from tests.support.world import seed_workspace

    return make_embedder(cache_dir=seed_workspace(tmp_path_factory.mktemp("warm"), sample_vectors) / "cache")


@pytest.fixture()
def app_workspace(tmp_path, monkeypatch, sample_vectors) -> Path:
    """A fresh workspace folder (tmp_path/ws) that already holds the sample set's vectors and nothing else, named
    by CHUNKLENS_WORKSPACE for the app under test: loading and chunking the sample set does all its work except
    embedding texts the run has seen before."""
    from tests.support.world import seed_workspace

    ws = seed_workspace(tmp_path / "ws", sample_vectors)
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(ws))
    return ws


@pytest.fixture(autouse=True)
def _local_server_by_default(monkeypatch, tmp_path):
    """AppTest serves no address, so `auto` would make every test a shared server. Tests run as `scripts/run-app.sh`
    serves by default (loopback: a local server); tests of a shared server set CHUNKLENS_MODE=shared themselves.
    No operator file of the machine running the tests is read."""
    monkeypatch.setenv("CHUNKLENS_MODE", "local")
    monkeypatch.setenv("CHUNKLENS_CONFIG", str(tmp_path / "no-server.toml"))
    for name in ("CHUNKLENS_CHROMA_SERVER", "CHUNKLENS_EMBEDDER_BASE_URL", "CHUNKLENS_MODEL_SERVER_URL",
                 "CHUNKLENS_MODEL_NAME", "CHUNKLENS_LLM_BASE_URL", "CHUNKLENS_LLM_MODEL", "CHUNKLENS_SCORER_MODEL",
                 "CHUNKLENS_MAX_UPLOAD_MB"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _error_details_restored():
    """A shared server's app sets Streamlit's process-wide `client.showErrorDetails` (components.state
    `hide_error_details`); a served process is one mode, but a test process runs both, so each test starts with
    the value it had before."""
    from streamlit import config

    before = config.get_option("client.showErrorDetails")
    yield
    config.set_option("client.showErrorDetails", before)


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance of two CPUs for a module's tests (the bench and bench.scale use a Ray already started
    in their process), stopped after them."""
    from core.evaluation.ray_executor import OBJECT_STORE_BYTES, import_ray

    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, object_store_memory=OBJECT_STORE_BYTES, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()
