"""The composition root: the one module that loads every plugin, so the registries they fill are complete.

The registries (`core.chunkers.registry` for chunkers, `core.services` for the services chunkers need,
`core.evaluation.fields` for report fields) import no plugin; the plugins register themselves when imported,
here: the generic chunkers (`core.chunkers`) and the papers' methods (`core.methods`: CHOP's and LGMGC's
chunkers, their services and report fields). Embedders are built by `core.store.embedders.make_embedder`.

Every entry point imports this module first: the app, the command line, the benchmark and study scripts, and
the tests' conftest. Nothing inside `core` imports it.
"""

from __future__ import annotations

from collections.abc import Sequence

import core.chunkers  # noqa: F401  (registers the generic chunkers)
import core.chunkers.peers  # noqa: F401  (registers the peers: the libraries' splitters)
import core.evaluation.fidelity  # noqa: F401  (registers dropped_chars_share and altered_chunks_share)
import core.methods  # noqa: F401  (registers CHOP and LGMGC: chunkers, services, report fields)
from core.chunkers.registry import available
from core.evaluation.fields import register_report_fields
from core.infra.jsonio import JsonObject
from core.schema.documents import Document
from core.schema.runs import ChunkedRun

__all__ = ["available"]


@register_report_fields
def chunker_notes(documents: Sequence[Document], run: ChunkedRun) -> JsonObject:
    """`chunker_notes`: the lines a generic chunker left for the user (`ChunkedRun.notes`; `page` on a document
    without pages), which `core bench` prints; [] for most runs. Registered here, the one module above both the
    generic chunkers and evaluation."""
    return {"chunker_notes": [*run.notes()]}
