"""`python -m bench.scale --executor ray` on a tiny size (one sample manual, 1x, 1 and 2 workers, on a local Ray
instance of two CPUs): the Ray stages are measured beside the local ones, checked against them, and reported under
the `ray` key and in the printed text; `--executor local` stays without that key."""

from __future__ import annotations

import json

import pytest

from bench import scale as bs
from core.infra.errors import ChunkLensError
from tests.support.data import ROOT

SAMPLE = ROOT / "sample_data" / "qa"
TINY = ["--data", str(SAMPLE), "--fraction", "0.01", "--scales", "1", "--questions", "5", "--skip-latency"]


@pytest.mark.slow
def test_ray_executor_reports_both_worker_counts_against_the_local_stages(local_ray, tmp_path, capsys):
    out = tmp_path / "scale_ray.json"
    report = bs.main([*TINY, "--executor", "ray", "--workers", "2,1", "--json", str(out)])
    printed = capsys.readouterr().out

    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    ray = report["ray"]
    assert ray["cpus"] == 2 and ray["workers"] == [1, 2] and ray["warm_up_seconds"] > 0
    (scale,) = ray["scales"]
    row = report["growth"]["scales"][0]
    assert scale["scale"] == 1 and scale["documents"] == 1 and scale["chunks"] == row["chunks"] > 10
    assert scale["vectors"] == row["index_units"]
    local = scale["local"]
    assert local["chunking_seconds"] == row["seconds"]["chunking"]
    assert local["embedding_seconds"] == row["seconds"]["embedding"]
    one, two = scale["ray"]
    assert (one["workers"], two["workers"]) == (1, 2)
    for r in (one, two):
        assert r["chunks"] == scale["chunks"] and r["vectors"] == scale["vectors"]
        assert r["max_vector_difference"] <= bs.VECTOR_TOLERANCE
        assert r["chunking_seconds"] > 0 and r["embedding_seconds"] > 0
        # the rates come from the unrounded seconds; a 1-document chunking stage lasts some milliseconds
        assert r["documents_per_second"] == pytest.approx(1 / r["chunking_seconds"], rel=0.1)
        assert r["chunks_per_second"] == pytest.approx(r["chunks"] / r["chunking_seconds"], rel=0.1)
        assert r["vectors_per_second"] == pytest.approx(r["vectors"] / r["embedding_seconds"], rel=0.1)
        for stage in ("chunking", "embedding"):
            over = r["overhead_against_local"][stage]
            assert local[f"{stage}_seconds"] > 0  # one sample manual's chunking takes some milliseconds
            assert over["ratio"] == pytest.approx(r[f"{stage}_seconds"] / local[f"{stage}_seconds"], rel=0.01)
            assert over["seconds"] == pytest.approx(r[f"{stage}_seconds"] - local[f"{stage}_seconds"], abs=0.002)
    assert one["speedup_over_fewest"] == {"chunking": 1.0, "embedding": 1.0}
    assert two["speedup_over_fewest"]["embedding"] == pytest.approx(
        one["embedding_seconds"] / two["embedding_seconds"], rel=0.01)
    assert "part 1 on Ray" in printed and "speed-up chunk / embed" in printed
    assert local_ray.is_initialized()  # a Ray started before the run is left running


def test_more_workers_than_rays_cpus_is_one_line(local_ray, tmp_path):
    with pytest.raises(ChunkLensError, match="--workers 3 is more than the 2 CPUs"):
        bs.main([*TINY, "--executor", "ray", "--workers", "1,3"])


@pytest.mark.parametrize(("extra", "says"), [
    (["--executor", "ray", "--skip-growth", "--skip-latency"], "leave nothing"),
    (["--executor", "ray", "--skip-growth"], "nothing to do with --skip-growth"),
    (["--executor", "ray", "--embedder", "openai:text-embedding-3-small"], "embedding server"),
    (["--ray-address", "auto"], "needs --executor ray"),
])
def test_ray_options_out_of_place_are_one_line(extra, says):
    args = ["--data", str(SAMPLE), *extra]
    with pytest.raises(ChunkLensError, match=says):
        bs.main(args)


@pytest.mark.slow
def test_the_local_executor_is_the_default_and_its_report_has_no_ray_key(capsys):
    report = bs.main(TINY)
    assert "ray" not in report and "executor" not in report["input"]
    assert "part 1 on Ray" not in capsys.readouterr().out
