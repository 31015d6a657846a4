"""Getting text in: files (PDF, DOCX, TXT, Markdown) as exact text, qa-spans v1 sets, the library of uploads,
and archives read safely."""
