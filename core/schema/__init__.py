"""The nouns every part of ChunkLens shares, in one place: documents and the segments of a joined stream
(`documents`), character spans and intervals (`spans`), chunks and a chunker's output (`chunks`), questions of a
QA set (`questions`), what a search returns (`hits`), and one chunker's run as chunked and as indexed (`runs`).
A leaf layer: it imports nothing of `core` but the infrastructure's errors, so everything else can build on it.
Import a noun from its module."""
