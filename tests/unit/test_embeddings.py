"""The bundled MiniLM embedder, its long-text policy, and the on-disk cache."""

from __future__ import annotations

import numpy as np

from core.store.embeddings import CachedEmbedder, EmbeddingCache


def test_minilm_is_bundled_and_meaningful(minilm):
    v = minilm.embed(["a cat sat on the mat", "a kitten rested on a rug", "quarterly tax credit carry-forward"])
    assert v.shape == (3, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > 0.5 > v[0] @ v[2]
    assert minilm.describe() == "all-MiniLM-L6-v2 (truncate@256 word pieces)"


def test_long_text_truncate_ignores_the_tail_and_window_reads_it():
    from core.store.embeddings import SentenceTransformerEmbedder

    truncate = SentenceTransformerEmbedder(long_text="truncate")
    window = SentenceTransformerEmbedder(long_text="window")
    head = "The air filter should be cleaned every two weeks. " * 40  # well over 256 word pieces
    a, b = head + "Error E4 means the temperature sensor failed.", head + "The camera battery charges in three hours."
    assert len(window.windows(a)) >= 2
    assert np.allclose(truncate.embed([a])[0], truncate.embed([b])[0], atol=1e-5)  # the tail is never read
    wa, wb = window.embed([a, b])
    assert wa @ wb < 0.999  # the windowed embedding sees the different tails
    short = "Clean the filter."
    assert np.allclose(truncate.embed([short]), window.embed([short]), atol=1e-5)


def test_one_window_embedder_shared_by_threads_gives_the_same_vectors():
    """The app shares one embedder among its sessions: untruncated window tokenising in some threads while others
    encode must neither fail nor change a vector."""
    import threading

    from core.store.embeddings import SentenceTransformerEmbedder

    window = SentenceTransformerEmbedder(long_text="window")
    texts = ["The air filter should be cleaned every two weeks. " * 40 + "Error E4.", "Clean the filter.",
             "word " * 600]
    expected = window.embed(texts)
    errors, mismatches = [], []

    def work() -> None:
        try:
            for _ in range(8):
                if not np.allclose(window.embed(texts), expected, atol=1e-5):
                    mismatches.append(1)
                window.embed(["a short question"] * 4)
        except Exception as exc:  # noqa: BLE001 - any failure in a thread is the finding
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and not mismatches, errors[:2]


def test_windows_cover_every_word_piece(minilm):
    text = " ".join(f"word{i}" for i in range(600))
    pieces = minilm.windows(text)
    assert "".join(p.replace(" ", "") for p in pieces) == text.replace(" ", "")


def test_cache_skips_known_texts(minilm, tmp_path):
    cached = CachedEmbedder(minilm, EmbeddingCache(tmp_path / "e.sqlite"))
    first = cached.embed(["alpha", "beta", "alpha"])
    assert cached.stats.computed == 2
    again = CachedEmbedder(minilm, EmbeddingCache(tmp_path / "e.sqlite"))  # new process, same file
    second = again.embed(["beta", "alpha"])
    assert again.stats.computed == 0
    assert np.array_equal(first[1], second[0]) and np.array_equal(first[0], second[1])


def test_texts_batched_by_length_come_back_in_their_own_order(tmp_path):
    """Texts are embedded shortest first (less padding) in several calls; each vector must still be its text's,
    through the cache as well."""
    from core.store.embeddings import SentenceTransformerEmbedder, by_length

    sizes = [(40, "filter"), (2, "battery"), (90, "camera"), (1, "remote"), (15, "warranty"), (60, "timer"), (5, "fan")]
    texts = [("word " * n).strip() + f" {topic}" for n, topic in sizes]
    assert [len(texts[i]) for i in by_length(texts)] == sorted(len(t) for t in texts)
    for long_text in ("truncate", "window"):
        small = SentenceTransformerEmbedder(long_text=long_text, batch_size=1)  # slices of 4: two calls
        alone = np.stack([small.embed([t])[0] for t in texts])
        assert np.allclose(small.embed(texts), alone, atol=1e-5)
        cached = CachedEmbedder(small, EmbeddingCache(tmp_path / f"{long_text}.sqlite"), save_every=3)
        assert np.allclose(cached.embed(texts[:2]), alone[:2], atol=1e-5)
        assert np.allclose(cached.embed(texts), alone, atol=1e-5)


def test_the_int8_minilm_gives_the_fp32_models_vectors_nearly_and_never_shares_its_cache(minilm, tmp_path):
    """`bundled:minilm-int8`: the same model computing in int8 on onnxruntime, the same tokenizer, windows and
    pooling; a text's vector is the same alone or among others (each text is quantised on its own)."""
    from core.store.embedders import make_embedder
    from core.store.onnx_embedder import OnnxMiniLMEmbedder

    int8 = OnnxMiniLMEmbedder(model_folder=tmp_path)
    texts = ["a cat sat on the mat", "a kitten rested on a rug", "quarterly tax credit carry-forward",
             "Error E4 means the temperature sensor failed.", "Clean the filter every two weeks. " * 60,
             *(f"Step {i}: press the power button for {i} seconds." for i in range(20))]  # over SMALL_INPUT
    ours, theirs = int8.embed(texts), minilm.embed(texts)
    assert ours.shape == (len(texts), 384) and np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert ((ours * theirs).sum(axis=1) > 0.97).all()  # int8 arithmetic moves a vector by a few % cosine at most
    assert (ours * theirs).sum(axis=1).mean() > 0.985
    assert ours[0] @ ours[1] > 0.5 > ours[0] @ ours[2]
    long = " ".join(f"word{i}" for i in range(600))
    assert int8.windows(long) == minilm.windows(long)  # the same word pieces, so the same windows
    window = OnnxMiniLMEmbedder(long_text="window", model_folder=tmp_path)
    head = "The air filter should be cleaned every two weeks. " * 40
    a, b = window.embed([head + "Error E4 means the sensor failed.", head + "The battery charges in three hours."])
    assert a @ b < 0.999
    alone = np.stack([int8.embed([t])[0] for t in texts])  # one text: in the caller's thread
    assert np.allclose(alone, ours, atol=1e-6)
    cached = make_embedder("bundled:minilm-int8", cache_dir=tmp_path)
    fp32 = make_embedder("bundled:all-MiniLM-L6-v2", cache_dir=tmp_path)
    assert cached.key != fp32.key
    cached.embed(texts[:2])
    fp32.embed(texts[:2])
    assert fp32.stats.computed == 2  # int8 vectors in the same file are not fp32's


def test_the_int8_model_is_built_once_from_the_fp32_export_and_its_matmuls_are_integer(tmp_path):
    """The int8 model is the fp32 export requantised: the export multiplies in fp32, the model ChunkLens builds
    from it multiplies int8 by int8; both are made once per folder."""
    import onnx

    from core.store.onnx_embedder import RECIPE, exported_model, quantised_model

    def ops(path):
        return [n.op_type for n in onnx.load(str(path)).graph.node]

    built = quantised_model(tmp_path)
    source = exported_model(tmp_path)
    assert built.parent == tmp_path and RECIPE in built.name
    assert "MatMulInteger" not in ops(source) and ops(source).count("MatMul") >= 48
    assert ops(built).count("MatMulInteger") >= 36  # Q, K, V, attention out, FFN in and out in each of 6 layers
    first = built.stat().st_mtime_ns
    assert quantised_model(tmp_path) == built and built.stat().st_mtime_ns == first
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([built.name, source.name])  # no half-written file


def test_the_fp32_minilm_on_onnxruntime_gives_the_torch_models_vectors(minilm, tmp_path):
    """`bundled:minilm-fp32`: the bundled checkpoint exported once to ONNX and run by onnxruntime, one text per
    call. Same weights, same fp32 arithmetic, so the same vectors as sentence-transformers on torch (to float
    rounding) for short texts, texts over SMALL_INPUT, truncated and windowed long texts; its own cache key."""
    from core.store.embedders import make_embedder
    from core.store.embeddings import SMALL_INPUT
    from core.store.onnx_embedder import FP32_RECIPE, OnnxMiniLMEmbedder, exported_model

    built = exported_model(tmp_path)
    assert built.parent == tmp_path and FP32_RECIPE in built.name
    first = built.stat().st_mtime_ns
    assert exported_model(tmp_path) == built and built.stat().st_mtime_ns == first  # made once
    assert [p.name for p in tmp_path.iterdir()] == [built.name]  # no half-written file beside it

    fp32 = OnnxMiniLMEmbedder(precision="fp32", model_folder=tmp_path)
    head = "The air filter should be cleaned every two weeks. " * 40  # over 256 word pieces
    texts = ["a cat sat on the mat", "Error E4 means the temperature sensor failed.", head + "Error E4.",
             head + "The battery charges in three hours.", "ÜBER 名前 — 225B/226R",
             *(f"Step {i}: hold the power button for {i} seconds." for i in range(SMALL_INPUT + 4))]
    ours, torch_vectors = fp32.embed(texts), minilm.embed(texts)
    assert np.allclose(ours, torch_vectors, atol=1e-5)
    assert np.allclose(ours[2], ours[3], atol=1e-5)  # truncated: the differing tails are never read
    assert np.allclose(fp32.embed(texts[:1]), ours[:1], atol=1e-6)  # a question alone, in the caller's thread

    from core.store.embeddings import SentenceTransformerEmbedder

    windowed = OnnxMiniLMEmbedder(precision="fp32", long_text="window", model_folder=tmp_path)
    assert np.allclose(windowed.embed(texts[2:4]), SentenceTransformerEmbedder(long_text="window").embed(texts[2:4]),
                       atol=1e-5)
    assert fp32.describe() == "all-MiniLM-L6-v2 fp32 (onnxruntime) (truncate@256 word pieces)"
    keys = {OnnxMiniLMEmbedder(model_folder=tmp_path).key, fp32.key, windowed.key, minilm.key,
            make_embedder("bundled:minilm-fp32", cache_dir=tmp_path).key}
    assert len(keys) == 4  # int8, fp32 onnx truncate / window, torch: never one cache entry for two of them


def test_a_damaged_model_file_is_built_again_and_an_unwritable_folder_is_named(tmp_path):
    """A model file cut short (a full disk, a killed build) is deleted and built once more, so the embedder still
    works; a cache folder that cannot be written is one clear ConfigError naming CHUNKLENS_MODEL_CACHE."""
    import pytest

    from core.infra.errors import ConfigError
    from core.store.onnx_embedder import OnnxMiniLMEmbedder, model_file

    damaged = model_file(tmp_path, "fp32")
    damaged.write_bytes(b"\x08\x07half a protobuf")
    embedder = OnnxMiniLMEmbedder(precision="fp32", model_folder=tmp_path)
    assert damaged.stat().st_size > 10_000_000  # exported afresh
    vector = embedder.embed(["Error E4 means the sensor failed."])
    assert vector.shape == (1, 384) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="CHUNKLENS_MODEL_CACHE"):
        OnnxMiniLMEmbedder(precision="fp32", model_folder=blocker / "models")


def test_the_unread_part_is_exactly_what_truncation_drops(minilm, tmp_path):
    """`unread_chars`: the characters past the embedder's input limit. Embedding only the read part gives the
    whole text's vector; under "window" nothing is unread; the default onnxruntime MiniLM agrees with torch."""
    from core.store.embedders import make_embedder
    from core.store.embeddings import SentenceTransformerEmbedder, unread_chars, unread_share

    text = "The air filter should be cleaned every two weeks, and the drain pan emptied daily. " * 30
    unread = unread_chars(minilm, text)
    assert 0 < unread < len(text)
    read = text[: len(text) - unread]
    assert len(minilm.offsets(read)) == minilm.max_pieces - 2  # exactly the pieces that fit with [CLS] and [SEP]
    assert np.allclose(minilm.embed([read])[0], minilm.embed([text])[0], atol=1e-5)
    assert unread_chars(minilm, "Clean the filter.") == 0
    assert unread_chars(SentenceTransformerEmbedder(long_text="window"), text) == 0
    onnx = make_embedder(cache_dir=tmp_path)  # the default: fp32 MiniLM on onnxruntime, behind the vector cache
    assert unread_chars(onnx, text) == unread
    assert unread_share(onnx, [text, "Clean the filter."]) == unread / (len(text) + len("Clean the filter."))


def test_every_cache_shares_one_model_per_process(tmp_path):
    """Services of different workspaces (libraries, settings, sessions, test workspaces) wrap one loaded model each
    per process: a second workspace costs a vector cache, not another model and thread pool."""
    from core.store.embedders import make_embedder

    first = make_embedder("bundled:minilm-fp32", cache_dir=tmp_path / "a")
    second = make_embedder("bundled:minilm-fp32", cache_dir=tmp_path / "b")
    windowed = make_embedder("bundled:minilm-fp32", long_text="window", cache_dir=tmp_path / "c")
    assert first is not second and first.cache is not second.cache
    assert first.inner is second.inner and first.key == second.key
    assert windowed.inner is not first.inner and windowed.key != first.key  # another policy is another embedder
    vectors = first.embed(["Error E4 means the sensor failed."])
    assert np.allclose(second.embed(["Error E4 means the sensor failed."]), vectors)
    assert (first.stats.computed, second.stats.computed) == (1, 1)  # each cache still counts its own work
