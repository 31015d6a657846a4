"""`llamaindex-sentence` and `llamaindex-semantic`: LlamaIndex's SentenceSplitter and SemanticSplitterNodeParser
(llama-index-core) at their documented defaults, with the chunk texts `get_nodes_from_documents` gives.

Nothing is downloaded, whatever the environment says. LlamaIndex's defaults load two things at first use:
- its tokenizer, tiktoken's encoding for gpt-3.5-turbo (cl100k_base, special tokens allowed), from its packaged
  cache unless TIKTOKEN_CACHE_DIR is set: a folder there without the file makes tiktoken fetch it. The peers hand
  the same encoding, counted the same way, from the project's packaged files (`core.tokens`).
- its sentence splitter, NLTK's PunktSentenceTokenizer() (untrained: it reads no data), reached through a helper
  that first looks for NLTK's stopwords under NLTK_DATA and downloads them when they are missing
  (`llama_index/core/utils.py`). The peers hand the same splitter, built directly.
`test_peer_llamaindex.py` checks both give the library's own default chunks, and that nothing is fetched with
NLTK_DATA and TIKTOKEN_CACHE_DIR naming an empty folder.

LlamaIndex finds each node's start by searching for its text from just past the previous node's start, which in
repeated text finds an earlier copy (a SentenceSplitter chunk that shares 8 tokens with the one before placed 47
characters too early, `test_peer_llamaindex.py`). Those starts are not used: the semantic parser's chunks, which
never overlap, are placed from their texts alone (`core.chunkers.peers.spans`), and so are SentenceSplitter's: its
chunks are runs of its splits, each beginning with the last splits of the one before (up to `chunk_overlap`), so
they are placed contiguous, the copy of a chunk's text that shares least with the chunk before tried first
(`Overlap.least`): the floor counted back `chunk_overlap` tokens of the whole text bounds its overlap only loosely
(it counts each split apart, a long word's characters one by one)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from core.chunkers.base import MetadataPrefix, TitleRouting, check_range
from core.chunkers.registry import register
from core.chunkers.semantic import MAX_BUFFER
from core.schema.documents import Document
from core.tokens import get_encoding

from ..snippets import library_snippet
from .base import MINILM, PeerChunker, check_sizes
from .spans import Overlap

#: the import every LlamaIndex snippet starts with: its Document, which `get_nodes_from_documents` takes
LLAMA_DOCUMENT = "from llama_index.core import Document"
#: a LlamaIndex snippet's last line: the splitter's node texts for `text`
NODE_TEXTS = "chunks = [node.text for node in splitter.get_nodes_from_documents([Document(text=text)])]"


def llamaindex_tokenizer() -> Callable[[str], list[int]]:
    """LlamaIndex's default tokenizer (`llama_index.core.utils.get_tokenizer`): cl100k_base's `encode` with every
    special token allowed, the encoding loaded from the project's packaged files."""
    return partial(get_encoding().encode, allowed_special="all")


def llamaindex_sentences() -> Callable[[str], list[str]]:
    """LlamaIndex's default sentence splitter (`split_by_sentence_tokenizer`) with its Punkt tokenizer built here,
    not through `globals_helper`, which may download NLTK data."""
    from llama_index.core.node_parser.text.utils import split_by_sentence_tokenizer_internal
    from nltk.tokenize import PunktSentenceTokenizer

    tokenizer = PunktSentenceTokenizer()
    return lambda text: split_by_sentence_tokenizer_internal(text, tokenizer)


def nodes_of(parser: Any, doc: Document) -> tuple[list[str], None]:
    """The parser's node texts for `doc`, without the start LlamaIndex gives each (see the module's docstring)."""
    from llama_index.core import Document as LlamaDocument
    from llama_index.core.schema import MetadataMode

    nodes = parser.get_nodes_from_documents([LlamaDocument(text=doc.text)])
    return [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes], None


@register
@dataclass
class LlamaIndexSentence(MetadataPrefix, TitleRouting, PeerChunker):
    """SentenceSplitter: chunks of whole sentences where they fit, up to `chunk_size` tokens, overlapping by up to
    `chunk_overlap`; together they cover every character but whitespace."""

    name = "llamaindex-sentence"
    library = "llama-index-core"
    chunk_size: int = 1024
    chunk_overlap: int = 200

    def validate(self) -> None:
        check_sizes(self.name, "chunk_size", self.chunk_size, self.chunk_overlap, "tokens")

    def overlap_bound(self) -> Overlap:
        """Up to `chunk_overlap` tokens, the least overlap tried first (see the module's docstring)."""
        return Overlap(self.chunk_overlap, "tokens", least=True)

    def split(self, doc: Document) -> tuple[list[str], None]:
        from llama_index.core.node_parser import SentenceSplitter

        splitter = SentenceSplitter(chunk_size=self.chunk_size, chunk_overlap=self.chunk_overlap,
                                    tokenizer=llamaindex_tokenizer(), chunking_tokenizer_fn=llamaindex_sentences())
        # the texts get_nodes_from_documents gives a document without metadata, without the warning it prints to
        # stdout for each document under 50 tokens (which would land in an export written to stdout)
        return splitter.split_text(doc.text), None

    def snippet(self) -> str:
        """SentenceSplitter with these sizes, as a user builds it (its default tokenizer is the same cl100k_base)."""
        return library_snippet(self, [LLAMA_DOCUMENT, "from llama_index.core.node_parser import SentenceSplitter"], [
            f"splitter = SentenceSplitter(chunk_size={self.chunk_size}, chunk_overlap={self.chunk_overlap})",
            NODE_TEXTS])


@register
@dataclass
class LlamaIndexSemantic(MetadataPrefix, TitleRouting, PeerChunker):
    """SemanticSplitterNodeParser with the run's embedder (the bundled MiniLM by default): each sentence is embedded
    with `buffer_size` sentences either side; a chunk ends where the distance to the next window is above the
    `breakpoint_percentile_threshold` percentile. No size cap (LlamaIndex has none). Chunks never overlap."""

    name = "llamaindex-semantic"
    library = "llama-index-core"
    needs = ("embedder",)
    buffer_size: int = 1
    breakpoint_percentile_threshold: int = 95

    def validate(self) -> None:
        check_range(self.name, "buffer_size", self.buffer_size, 0, MAX_BUFFER, "sentences either side",
                    "each sentence is embedded again with every window it is in")
        check_range(self.name, "breakpoint_percentile_threshold", self.breakpoint_percentile_threshold, 0, 100)

    def split(self, doc: Document) -> tuple[list[str], None]:
        from llama_index.core.node_parser import SemanticSplitterNodeParser

        from .llamaindex_embedding import ChunkLensEmbedding

        parser = SemanticSplitterNodeParser(embed_model=ChunkLensEmbedding(self.context.embedder),
                                            buffer_size=self.buffer_size,
                                            breakpoint_percentile_threshold=self.breakpoint_percentile_threshold,
                                            sentence_splitter=llamaindex_sentences())
        return nodes_of(parser, doc)

    def snippet(self) -> str:
        """SemanticSplitterNodeParser with these parameters and the bundled model, as a user builds it."""
        return library_snippet(self, [LLAMA_DOCUMENT, "from llama_index.core.node_parser import "
                                      "SemanticSplitterNodeParser",
                                      "from llama_index.embeddings.huggingface import HuggingFaceEmbedding"], [
            f"embed_model = HuggingFaceEmbedding(model_name=\"{MINILM}\")",
            f"splitter = SemanticSplitterNodeParser(buffer_size={self.buffer_size}, "
            f"breakpoint_percentile_threshold={self.breakpoint_percentile_threshold}, embed_model=embed_model)",
            NODE_TEXTS])
