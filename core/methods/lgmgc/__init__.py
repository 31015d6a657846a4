"""LGMGC: logits-guided parent chunks (a causal LM's p(end of text) picks each cut) and multi-granular
children indexed in their place."""

from core.methods.lgmgc import chunker, report, service  # noqa: F401  (registration: chunkers, report, service)
