"""The composition root: the one module that loads every plugin, so the registries they fill are complete.

The registries (`core.chunkers.registry` for chunkers, `core.services` for the services chunkers need,
`core.evaluation.fields` for report fields) import no plugin; the plugins register themselves when imported,
here: the generic chunkers (`core.chunkers`) and the papers' methods (`core.methods`: CHOP's and LGMGC's
chunkers, their services and report fields). Embedders are built by `core.store.embedders.make_embedder`.

Every entry point imports this module first: the app, the command line, the benchmark and study scripts, and
the tests' conftest. Nothing inside `core` imports it.
"""

from __future__ import annotations

import core.chunkers  # noqa: F401  (registers the generic chunkers)
import core.methods  # noqa: F401  (registers CHOP and LGMGC: chunkers, services, report fields)
from core.chunkers.registry import available

__all__ = ["available"]
