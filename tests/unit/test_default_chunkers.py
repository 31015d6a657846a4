"""The app's default chunkers are different baselines on the sample set: no two of them index the same chunks
(span and prefix: `chop` cuts naive-500t's windows by design and differs by its CNM prefix), except a
retrieval-only variant (`chop:retrieval=filter`), which shares its chunks with `chop` by design."""

from __future__ import annotations

import pytest

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.ingest.datasets import load_dataset
from core.methods.chop.rules import RuleCnm
from core.workbench import DEFAULT_SPECS, sample_folder


@pytest.mark.slow
def test_the_default_chunkers_are_pairwise_different_on_the_sample_set(warm_embedder):
    docs = load_dataset(sample_folder()).documents
    context = ChunkerContext(embedder=warm_embedder, llm=RuleCnm(embedder=warm_embedder))
    spans, identities = {}, {}
    for spec in DEFAULT_SPECS:
        chunker = make_chunker(spec, context)
        identities[spec] = chunker.identity
        spans[spec] = [(c.doc_id, c.start, c.end, c.prefix) for d in docs for c in chunker.run(d).chunks]
    for i, a in enumerate(DEFAULT_SPECS):
        for b in DEFAULT_SPECS[i + 1 :]:
            if identities[a] == identities[b]:
                assert {a, b} == {"chop", "chop:retrieval=filter"}
                continue
            assert spans[a] != spans[b], f"{a} and {b} index the same chunks on the sample set"
    assert len(spans["paragraph"]) != len(spans["recursive"])
