"""Scoring every chunker the same way: metrics, relevance against gold spans, collisions between documents,
the bench behind `python -m core bench`, report tables and generated answers."""
