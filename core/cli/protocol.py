"""`bench --protocol`: a named setting of the bench's own flags, so a run stands beside a published table.

`chroma` is Chroma's chunking evaluation (brandonstarxel/chunking_evaluation, `GeneralEvaluation().run`): dense
search only (no BM25), no reranker, one index over every document of the set (no joined stream, questions as
written), five chunks retrieved; the bench then adds Chroma's Precision_Omega, its `retrieve=-1` figures and the
means per corpus (`core.evaluation.chroma`). A flag the preset sets may be given only with the preset's value:
anything else would no longer be Chroma's setting, so it is refused with one line rather than silently changed.
`default` is the bench as it always was."""

from __future__ import annotations

import argparse
from typing import TypedDict

from core.infra.errors import ChunkLensError

PROTOCOLS = ("default", "chroma")
#: the bench's own cut-offs when neither --k nor a protocol names them
DEFAULT_KS = [1, 3, 5, 10]


class Preset(TypedDict, total=False):
    """A protocol's flags by argparse dest: the values it runs with; `k` only when --k is not given."""

    retrieval: str
    rerank: str
    k: list[int]
    join: bool
    qualify_queries: bool


#: each protocol's flags
PRESETS: dict[str, Preset] = {
    "default": {},
    "chroma": {"retrieval": "dense", "rerank": "none", "k": [5], "join": False, "qualify_queries": False},
}


def apply_protocol(args: argparse.Namespace) -> argparse.Namespace:
    """`args` with its protocol's preset filled in (--k defaulting to the bench's cut-offs otherwise); a flag given
    with another value than the preset's is a ChunkLensError naming it."""
    protocol = getattr(args, "protocol", "default") or "default"
    preset = PRESETS[protocol]
    for dest, value in preset.items():
        given = getattr(args, dest, None)
        if dest == "k":
            continue
        if given in (None, False) or given == value:
            setattr(args, dest, value)
            continue
        flag = "--" + dest.replace("_", "-")
        shown = flag if given is True else f"{flag} {given}"
        raise ChunkLensError(f"--protocol {protocol} runs {_phrase(dest, value)}; drop {shown}")
    if getattr(args, "k", None) is None:
        args.k = list(preset.get("k", DEFAULT_KS))
    return args


def _phrase(dest: str, value: object) -> str:
    return {"retrieval": f"--retrieval {value}", "rerank": f"--rerank {value}",
            "join": "the documents as separate documents in one index",
            "qualify_queries": "the questions as written"}.get(dest, f"{dest}={value}")
