"""The papers' methods, one package each: CHOP (`chop`) and LGMGC (`lgmgc`).

A method package holds everything that is particular to it (its chunkers, prompts, scoring, retrieval policy,
report fields) and reaches generic code only through the chunker interface and the registries it fills
(`core.evaluation.fields.register_report_fields`, the chunker registry).
Importing this package registers every method."""

from core.methods import chop, lgmgc  # noqa: F401  (registration)
