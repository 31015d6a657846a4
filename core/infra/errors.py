"""Errors a user can act on. Everything raised on purpose by `core` derives from `ChunkLensError`, so the
command line and the app can show one clear line instead of a traceback."""


class ChunkLensError(Exception):
    """A problem with the user's input or settings, with a message meant for people."""


class DocumentError(ChunkLensError):
    """A file that cannot be turned into text (empty, binary, encrypted, unsupported, too large)."""


class DatasetError(ChunkLensError):
    """A qa-spans v1 folder that is missing files or holds malformed records."""


class ConfigError(ChunkLensError):
    """An unknown chunker, a bad parameter, or an unusable backend setting."""


class StoreError(ChunkLensError):
    """The vector store failed while in use: a Chroma server that is down, restarted or refusing requests."""


class EmbeddingError(ChunkLensError):
    """An embedding server that could not answer (down, refusing, rate limiting) after its retries."""


class SetExists(DatasetError):
    """A QA set of that name is in the library already: replacing it must be asked for (`replace=True`)."""


class Stopped(ChunkLensError):
    """Work given up because whoever asked for it went away (a page's Stop, a rerun): nothing of it is kept."""


class GenerationError(ChunkLensError):
    """Questions could not be generated or written: no documents, nothing to ask about, nothing kept, or an output
    folder that is in use."""
