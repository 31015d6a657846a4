"""Stored vectors are checked before they are served: a row of the wrong length, with a NaN or an infinity, or not of
unit length, in a workspace's vector cache or the machine's shared file, is never served (it is computed again, with
one log line naming the file); the machine's file is ignored as a whole when its header does not match the embedder
at hand or it cannot be read. The real bundled MiniLM throughout."""

from __future__ import annotations

import json
import logging
import sqlite3

import numpy as np
import pytest

import core.store.embedders as embedders
from core.store.embeddings import CachedEmbedder, EmbeddingCache
from core.store.machine_file import file_problem
from core.store.vector_checks import sound_rows

TEXTS = ["Clean the fan blades every month.", "The remote takes two AAA batteries.", "Error E4: sensor failed.",
         "Press the timer button to stop the fan."]


def _damage(vector: np.ndarray, how: str) -> bytes:
    """`vector` damaged as a full disk, another model or a hand edit leaves it."""
    v = np.array(vector, dtype=np.float32)
    if how == "wrong length":
        return v[:-1].tobytes()
    if how == "empty":
        return b""
    if how == "NaN":
        v[3] = np.nan
    elif how == "Inf":
        v[7] = np.inf
    elif how == "not unit length":
        v *= 0.5
    return v.tobytes()


ROW_DAMAGE = ["wrong length", "empty", "NaN", "Inf", "not unit length"]


def _rewrite(path, rows: dict[str, bytes]) -> None:
    db = sqlite3.connect(str(path))
    db.executemany("UPDATE vectors SET vec = ? WHERE key = ?", [(b, k) for k, b in rows.items()])
    db.commit()
    db.close()


def test_sound_rows_keeps_unit_vectors_of_the_right_length_only():
    rng = np.random.default_rng(0)
    good = rng.normal(size=(6, 8)).astype(np.float32)
    good /= np.linalg.norm(good, axis=1, keepdims=True)
    blobs = {f"k{i}": v.tobytes() for i, v in enumerate(good)}
    blobs["k1"] = good[1][:-1].tobytes()
    blobs["k2"] = np.where(np.arange(8) == 0, np.nan, good[2]).astype(np.float32).tobytes()
    blobs["k3"] = (good[3] * 3).tobytes()
    found, refused = sound_rows(blobs, 8)
    assert sorted(found) == ["k0", "k4", "k5"] and np.array_equal(found["k4"], good[4])
    assert refused == {"wrong length": 1, "not finite": 1, "not unit length": 1}
    # without a stated length, the length most rows have
    assert sorted(sound_rows(blobs, None)[0]) == ["k0", "k4", "k5"]


@pytest.mark.parametrize("how", ROW_DAMAGE)
def test_a_damaged_row_in_the_workspace_cache_is_computed_again_and_healed(minilm, tmp_path, caplog, how):
    path = tmp_path / "embeddings.sqlite"
    first = CachedEmbedder(minilm, EmbeddingCache(path))
    honest = first.embed(TEXTS)
    _rewrite(path, {EmbeddingCache.key(minilm.key, TEXTS[1]): _damage(honest[1], how)})

    caplog.set_level(logging.WARNING)
    again = CachedEmbedder(minilm, EmbeddingCache(path))
    got = again.embed(TEXTS)
    assert np.allclose(got, honest, atol=1e-6) and again.stats.computed == 1
    [line] = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert "1 vector (" in line and "damaged" in line
    healed = CachedEmbedder(minilm, EmbeddingCache(path))  # the damaged row was overwritten
    assert np.allclose(healed.embed(TEXTS), honest, atol=1e-6) and healed.stats.computed == 0


@pytest.fixture()
def published(minilm, tmp_path, machine_file):
    """The machine's file holding TEXTS' vectors as `warm` publishes them, and those honest vectors."""
    honest = CachedEmbedder(minilm, EmbeddingCache(tmp_path / "warm.sqlite")).embed(TEXTS)
    embedders.publish_machine_vectors(tmp_path / "warm.sqlite", minilm)
    assert file_problem(machine_file, minilm, embedders.model_files(minilm), full=True) is None
    return machine_file, honest


@pytest.mark.parametrize("how", ROW_DAMAGE)
def test_a_damaged_row_in_the_machine_file_is_never_copied(minilm, tmp_path, published, caplog, how):
    path, honest = published
    _rewrite(path, {EmbeddingCache.key(minilm.key, TEXTS[2]): _damage(honest[2], how)})
    caplog.set_level(logging.WARNING)
    machine = embedders.machine_vectors(minilm)
    workspace = CachedEmbedder(minilm, EmbeddingCache(tmp_path / "ws.sqlite"), machine=machine)
    assert workspace.machine is not None  # the header still matches: its sound rows are served
    assert np.allclose(workspace.embed(TEXTS), honest, atol=1e-6)
    assert (workspace.stats.copied, workspace.stats.computed) == (3, 1)
    [line] = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert "damaged" in line and "python -m core warm" in line
    problem = file_problem(path, minilm, embedders.model_files(minilm), full=True)  # what `warm` reads first
    assert problem is not None and "1 vector (" in problem


def _header(path) -> dict:
    db = sqlite3.connect(str(path))
    try:
        return json.loads(db.execute("SELECT value FROM header").fetchone()[0])
    finally:
        db.close()


def _set_header(path, header) -> None:
    db = sqlite3.connect(str(path))
    if header is None:
        db.execute("DROP TABLE header")
    else:
        db.execute("UPDATE header SET value = ?", (json.dumps(header),))
    db.commit()
    db.close()


def _other_model(header):
    return {**header, "model_digest": "0" * 64}


def _other_dim(header):
    return {**header, "dim": 768}


def _other_embedder(header):
    return {**header, "embedder": "onnx:bundled:minilm-int8:dynamic-int8-per-channel-v2:truncate"}


def _moved_canaries(header):
    canaries = [{**c, "vector": (np.roll(c["vector"], 1)).tolist()} for c in header["canaries"]]
    return {**header, "canaries": canaries}


def _truncate(path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path) -> None:
    path.write_bytes(b"not a database, a full disk's leftovers " * 200)


WHOLE_FILE = {
    "no header": lambda p: _set_header(p, None),
    "another model's files": lambda p: _set_header(p, _other_model(_header(p))),
    "another length": lambda p: _set_header(p, _other_dim(_header(p))),
    "another embedder": lambda p: _set_header(p, _other_embedder(_header(p))),
    "canaries the model no longer gives": lambda p: _set_header(p, _moved_canaries(_header(p))),
    "truncated": _truncate,
    "garbage": _garbage,
}


@pytest.mark.parametrize("case", list(WHOLE_FILE))
def test_a_machine_file_that_does_not_match_is_ignored_whole(minilm, tmp_path, published, caplog, case):
    """Its rows are permuted as well (each text gets another text's sound vector, which no row check can see): a
    file another model made is ignored as a whole, so none of them is served."""
    path, honest = published
    keys = [EmbeddingCache.key(minilm.key, t) for t in TEXTS]
    _rewrite(path, {k: honest[(i + 1) % len(TEXTS)].tobytes() for i, k in enumerate(keys)})
    WHOLE_FILE[case](path)
    caplog.set_level(logging.WARNING)
    machine = embedders.machine_vectors(minilm)
    workspace = CachedEmbedder(minilm, EmbeddingCache(tmp_path / "ws.sqlite"), machine=machine)
    assert np.allclose(workspace.embed(TEXTS), honest, atol=1e-6)
    assert workspace.stats.copied == 0 and workspace.stats.computed == len(TEXTS)
    assert machine is None or case == "truncated"  # a cut that spares the header is found at the first read
    [line] = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert "python -m core warm" in line
    assert file_problem(path, minilm, embedders.model_files(minilm), full=True) is not None  # `warm` rebuilds it


def test_the_header_is_checked_once_per_process_for_one_version_of_the_file(minilm, published, monkeypatch):
    """A new workspace opening the machine's file embeds no canary again; a rebuilt file (a new inode) is checked."""
    path, _ = published
    calls = []
    real = minilm.embed
    monkeypatch.setattr(minilm, "embed", lambda texts, progress=None: calls.append(len(texts)) or real(texts))
    assert embedders.machine_vectors(minilm) is not None and len(calls) == 1
    assert embedders.machine_vectors(minilm) is not None and len(calls) == 1
    copy = path.with_name("copy.sqlite")
    copy.write_bytes(path.read_bytes())
    copy.replace(path)
    assert embedders.machine_vectors(minilm) is not None and len(calls) == 2


def _filled_cache(path, minilm) -> np.ndarray:
    """A workspace cache holding 2,000 other vectors, then TEXTS' (last, so at its end); TEXTS' honest vectors."""
    rng = np.random.default_rng(7)
    other = rng.normal(size=(2000, 384)).astype(np.float32)
    other /= np.linalg.norm(other, axis=1, keepdims=True)
    cache = EmbeddingCache(path)
    cache.put_many({f"{i:064x}": v for i, v in enumerate(other)})
    honest = CachedEmbedder(minilm, cache).embed(TEXTS)
    cache._db.close()  # the write-ahead log goes into the file
    return honest


@pytest.mark.parametrize("damage", ["garbage", "cut short"])
def test_a_damaged_workspace_cache_file_is_set_aside_and_started_again(minilm, tmp_path, caplog, damage):
    path = tmp_path / "cache" / "embeddings.sqlite"
    honest = _filled_cache(path, minilm)
    data = path.read_bytes()
    path.write_bytes(b"\x00garbage" * 5000 if damage == "garbage" else data[: len(data) // 2])
    damaged = path.read_bytes()

    caplog.set_level(logging.WARNING)
    again = CachedEmbedder(minilm, EmbeddingCache(path))
    assert np.allclose(again.embed(TEXTS), honest, atol=1e-6) and again.stats.computed == len(TEXTS)
    [line] = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    [kept] = path.parent.glob("embeddings.sqlite.damaged-*")
    assert "damaged" in line and kept.name in line and kept.read_bytes() == damaged
    later = CachedEmbedder(minilm, EmbeddingCache(path))  # the new cache holds what was computed again
    assert np.allclose(later.embed(TEXTS), honest, atol=1e-6) and later.stats.computed == 0


class _Unsized:
    """The bundled MiniLM as a remote server's model looks before its first answer: its vectors' length unknown."""

    def __init__(self, inner):
        self.inner, self.key, self.dim = inner, inner.key, None

    def embed(self, texts, progress=None):
        return self.inner.embed(texts, progress)


def test_an_embedder_of_unknown_length_is_never_served_rows_of_another(minilm, tmp_path):
    """Most rows cut short the same way: the usual length read is the wrong one, so the embedder's own answer
    decides, and every row of another length is computed again."""
    path = tmp_path / "embeddings.sqlite"
    honest = CachedEmbedder(minilm, EmbeddingCache(path)).embed(TEXTS)
    cut = {EmbeddingCache.key(minilm.key, t): v[:-1] / np.linalg.norm(v[:-1]) for t, v in zip(TEXTS[1:], honest[1:])}
    _rewrite(path, {k: v.astype(np.float32).tobytes() for k, v in cut.items()})  # unit length, one number short
    unsized = CachedEmbedder(_Unsized(minilm), EmbeddingCache(path))
    assert np.allclose(unsized.embed(TEXTS), honest, atol=1e-6) and unsized.stats.computed == 4
    again = CachedEmbedder(_Unsized(minilm), EmbeddingCache(path))
    assert np.allclose(again.embed(TEXTS), honest, atol=1e-6) and again.stats.computed == 0
