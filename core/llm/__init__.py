"""Language-model backends: chat (OpenAI-compatible HTTP, local transformers) behind one client with a
persistent answer cache and cost accounting, plus a rule-based CNM backend that needs no model."""
