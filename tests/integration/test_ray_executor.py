"""`core bench --executor ray`: the same figures as the local executor, on a local Ray instance of two CPUs; Ray
optional (one line naming the install command without it) and never imported by `core` until asked for."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from core.__main__ import main
from core.chunkers.paragraph import ParagraphChunker
from core.infra.errors import ChunkLensError
from tests.support.data import ROOT, shared_dataset

#: look-alike pairs (a module and its revision), so wrong_doc and the collisions have something to measure
DOC_IDS = "mi-shades,mi-shades-2020,mi-veils,mi-veils-2020"
CHUNKERS = "naive-500t,recursive,chop"
#: what describes a run's cost rather than its figures: seconds, what came from a cache, where the store is
COST_KEYS = ("seconds", "cached", "scores_cached", "vectors_computed")


def _bench(tmp_path, name: str, *extra: str) -> dict:
    out = tmp_path / f"{name}.json"
    status = main(["bench", "--data", str(shared_dataset("eurorack_modules")), "--doc-ids", DOC_IDS, "--chunkers",
                   CHUNKERS, "--quiet", "--workspace", str(tmp_path / f"ws-{name}"), "--out", str(out), *extra])
    assert status == 0
    return json.loads(out.read_text())


def _figures(report: dict) -> dict:
    kept = {k: v for k, v in report.items() if k not in ("store", "executor")}
    kept["results"] = {spec: {k: v for k, v in r.items() if k not in COST_KEYS}
                       for spec, r in report["results"].items()}
    return kept


@pytest.fixture(scope="module")
def local_report(tmp_path_factory):
    """The local executor's report of the module's set, in a fresh workspace, every vector computed."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CHUNKLENS_MACHINE_VECTORS", "off")
        return _bench(tmp_path_factory.mktemp("local"), "local")


@pytest.mark.slow
def test_ray_gives_exactly_the_local_figures(local_ray, local_report, tmp_path, monkeypatch, capsys):
    """Every metric, interval and pair of naive-500t, recursive and chop is the local run's, in fresh workspaces;
    and the work was Ray's: the bench found every chunk run and vector cached, the executor computed them."""
    monkeypatch.setenv("CHUNKLENS_MACHINE_VECTORS", "off")  # both runs compute every vector themselves
    local = local_report
    ray = _bench(tmp_path, "ray", "--executor", "ray")
    assert "executor" not in local
    assert _figures(ray) == _figures(local)
    assert list(ray["results"]) == CHUNKERS.split(",") and ray["n_questions"] > 0 and ray["pairs"]
    done = ray["executor"]
    assert done["executor"] == "ray" and done["workers"] == 2 and done["chunk_tasks"] > 0
    assert done["vectors_computed"] > 0
    for spec, result in ray["results"].items():
        assert result["cached"]["chunks"], spec
        assert result["vectors_computed"] == 0, spec
        assert local["results"][spec]["vectors_computed"] > 0, spec


@pytest.mark.slow
def test_ray_with_the_store_on_a_chroma_server_gives_the_local_figures(local_ray, local_report, tmp_path,
                                                                      monkeypatch):
    """What a cluster runs: Ray's workers chunk and embed, the collections go to a `chroma run` server (the
    driver writes them there), and every figure is the embedded store's local run's."""
    from tests.support.chroma_server import chroma_server

    monkeypatch.setenv("CHUNKLENS_MACHINE_VECTORS", "off")
    with chroma_server(tmp_path / "server-data") as port:
        ray = _bench(tmp_path, "ray-server", "--executor", "ray", "--chroma", f"127.0.0.1:{port}")
        from core.store.index import StoreSettings, VectorStore

        names = VectorStore(StoreSettings(host="127.0.0.1", port=port)).client.list_collections()
    assert _figures(ray) == _figures(local_report)
    assert f"127.0.0.1:{port}" in ray["store"] and ray["store"] != local_report["store"]
    assert len(names) == len(CHUNKERS.split(","))  # one collection per chunk run, on the server
    assert ray["executor"]["vectors_computed"] > 0


@pytest.mark.slow
def test_an_llm_chunker_asks_the_server_from_rays_workers(local_ray, llama, tmp_path, monkeypatch):
    """CHOP with its CNM and continuity prompts sent to an OpenAI-compatible server (llama-cpp-python's, on
    loopback) from two Ray workers at once: the report counts the workers' requests as the run's own, every answer
    lands in the workspace's answer cache, and a local run over that cache asks the server nothing for its chunks
    and gives the same figures."""
    import shutil

    from tests.support.corpora import tiny_folder

    monkeypatch.setenv("CHUNKLENS_MACHINE_VECTORS", "off")
    data = tiny_folder(tmp_path / "tiny")
    ws = tmp_path / "ws"
    spec = "chop:size=20:overlap=5"

    def bench(name: str, *extra: str) -> dict:
        out = tmp_path / f"{name}.json"
        assert main(["bench", "--data", str(data), "--chunkers", spec, "--cnm-backend", "openai", "--model-server-url",
                     llama.base_url, "--model-name", "smollm2", "--quiet", "--workspace", str(ws), "--out", str(out),
                     *extra]) == 0
        return json.loads(out.read_text())

    ray = bench("ray", "--executor", "ray")
    done, result = ray["executor"], ray["results"][spec]
    assert done["chunk_tasks"] == 2 and done["workers"] == 2  # one task per manual, both in flight at once
    asked = done["llm_use"][spec]["calls"]
    traces = json.loads(next((ws / "chunk_runs").glob("*.json")).read_text())["traces"]
    assert asked == sum(t["cd_calls"] + t["cnm_calls"] for t in traces.values()) > 0
    assert result["llm_calls"] >= asked and result["llm_tokens_in"] >= done["llm_use"][spec]["tokens_in"] > 0

    for run in (ws / "chunk_runs").glob("*.json"):
        run.unlink()  # chunk again, locally, from the answers the workers left
    shutil.rmtree(ws / "chroma")
    local = bench("local")
    assert "executor" not in local and local["results"][spec]["cached"]["chunks"] is False
    assert local["results"][spec]["llm_calls"] == 0
    cost = (*COST_KEYS, "llm_calls", "llm_tokens_in", "llm_tokens_out")
    assert ({k: v for k, v in result.items() if k not in cost}
            == {k: v for k, v in local["results"][spec].items() if k not in cost})
    assert ray["pairs"] == local["pairs"]


def test_without_ray_the_executor_is_one_line_naming_the_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if it were not installed
    status = main(["bench", "--data", str(ROOT / "sample_data" / "qa"), "--chunkers", "naive-500t", "--quiet",
                   "--workspace", str(tmp_path / "ws"), "--executor", "ray"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1 and err[0].startswith("error: --executor ray needs Ray")
    from core.evaluation.ray_executor import RAY_PIN

    assert f".venv/bin/pip install ray=={RAY_PIN}" in err[0] and "bash scripts/setup.sh --test" in err[0]


def test_ray_address_without_the_ray_executor_is_refused(tmp_path, capsys):
    status = main(["bench", "--data", str(ROOT / "sample_data" / "qa"), "--chunkers", "naive-500t", "--quiet",
                   "--workspace", str(tmp_path / "ws"), "--ray-address", "auto"])
    assert status == 2
    assert capsys.readouterr().err.strip() == "error: --ray-address goes with --executor ray"


def test_the_pin_is_the_test_set_ups_and_not_the_apps():
    from core.evaluation.ray_executor import RAY_PIN

    test_pins = (ROOT / "requirements-test.txt").read_text().splitlines()
    assert f"ray=={RAY_PIN}" in test_pins
    assert not any(line.startswith("ray") for line in (ROOT / "requirements.txt").read_text().splitlines())


def test_usage_statistics_are_off_before_ray_starts(monkeypatch):
    from core.evaluation.ray_executor import import_ray

    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "1")
    import_ray()
    import os

    assert os.environ["RAY_USAGE_STATS_ENABLED"] == "0"


def test_core_does_not_import_ray_until_asked():
    code = ("import sys, core.catalog, core.__main__, core.evaluation.prefetch, core.evaluation.ray_executor; "
            "print('ray' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


@pytest.mark.slow
def test_without_an_address_a_local_instance_is_started_and_stopped(tmp_path):
    """No Ray in the process: `--executor ray` starts one of this machine's CPUs for the run and stops it; and a
    second run over the same workspace finds every chunk run cached (nothing is chunked again)."""
    from core.evaluation.ray_executor import available_cpus

    out = tmp_path / "report.json"
    # an address Ray would otherwise join (nothing answers there): no --ray-address means a new local instance
    env = {**os.environ, "CHUNKLENS_WORKSPACE": str(tmp_path / "ws"), "HF_HUB_OFFLINE": "1",
           "RAY_ADDRESS": "127.0.0.1:1"}
    args = ("bench", "--data", str(ROOT / "sample_data" / "qa"), "--max-docs", "2", "--chunkers", "naive-500t",
            "--quiet", "--executor", "ray", "--out", str(out))
    for attempt in (1, 2):
        proc = subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        done = json.loads(out.read_text())["executor"]
        assert done["address"] == "local instance" and done["workers"] == available_cpus()
        assert (done["chunk_tasks"] > 0, done["runs_cached"]) == ((True, 0) if attempt == 1 else (False, 1))


@pytest.mark.parametrize("form", ["{}", "ray://{}"])
def test_a_cluster_that_is_not_there_is_one_line(tmp_path, form):
    """Nothing listens at the address: one line, at once (Ray alone waits on such an address for good)."""
    import socket

    from tests.support.cli import run_cli

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        address = form.format(f"127.0.0.1:{free.getsockname()[1]}")
    proc = run_cli("bench", "--data", str(ROOT / "sample_data" / "qa"), "--chunkers", "naive-500t", "--quiet",
                   "--executor", "ray", "--ray-address", address, workspace=tmp_path / "ws")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"error: cannot join the Ray cluster at {address}: nothing answers "
                                                "there (Connection refused)"]


@pytest.mark.parametrize("address", ["bad address", "ray://nohost", "http://127.0.0.1:6379"])
def test_a_malformed_address_is_one_line(tmp_path, capsys, address):
    status = main(["bench", "--data", str(ROOT / "sample_data" / "qa"), "--chunkers", "naive-500t", "--quiet",
                   "--workspace", str(tmp_path / "ws"), "--executor", "ray", "--ray-address", address])
    assert status == 2
    assert capsys.readouterr().err.strip() == ("error: --ray-address must be auto, HOST:PORT or ray://HOST:PORT, "
                                               f"not '{address}'")


@dataclasses.dataclass
class _Refusing(ParagraphChunker):
    """A chunker that fails as chunkers fail on bad input: a ChunkLensError of one line."""

    def chunk(self, doc):
        raise ChunkLensError(f"{doc.doc_id}: refused")


@pytest.mark.slow
def test_a_task_that_fails_with_one_line_fails_the_run_with_that_line(local_ray, tmp_path):
    """A chunker's error on a worker reaches the command line as its own line, not as Ray's remote traceback."""
    from core.evaluation.prefetch import GroupJob
    from core.evaluation.ray_executor import RayExecutor
    from core.ingest.datasets import load_dataset
    from core.settings import Settings

    documents = load_dataset(ROOT / "sample_data" / "qa").documents[:2]
    jobs = [GroupJob(_Refusing(), (0,)), GroupJob(_Refusing(), (1,))]
    with pytest.raises(ChunkLensError) as caught:
        list(RayExecutor(local_ray, 2).chunk(Settings(workspace=str(tmp_path / "ws")), documents, jobs))
    assert type(caught.value) is ChunkLensError
    assert str(caught.value) in {f"{d.doc_id}: refused" for d in documents}


def test_an_embedding_actor_uses_one_thread_and_gives_the_drivers_vectors_to_the_bit(tmp_path):
    """One Ray CPU, one embedding thread (not every core per actor); and a vector depends on its text only, so
    the actor's are the in-process embedder's exactly, whatever the batch."""
    import numpy as np

    from core.evaluation.ray_executor import _EmbedActor
    from core.settings import Settings
    from core.store.embedders import local_embedder

    settings = Settings(workspace=str(tmp_path / "ws"))
    actor = _EmbedActor(settings)
    assert actor.inner.workers == 1
    texts = ["Clean the filter every two weeks.", "E4: the sensor failed.", "short", "a longer text " * 40]
    b, vectors = actor.embed(7, texts)
    assert b == 7
    assert np.array_equal(vectors, local_embedder(settings.embedder, settings.long_text).embed(texts))
    assert np.array_equal(actor.embed(0, texts[2:3])[1][0], vectors[2])
