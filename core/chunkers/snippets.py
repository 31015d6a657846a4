""""Use it in your code": the short Python a user pastes into their own stack to build the chunker a spec names.

A peer's snippet calls its library directly, with the instance's parameters (`Chunker.snippet`, written in each
peer's module); a ChunkLens chunker whose cut rule a framework's splitter really shares gets that splitter
(`naive-500t`: LangChain's TokenTextSplitter); every other one of ChunkLens's own gets the lines that run it
through ChunkLens's core (`chunklens_snippet`). Every snippet reads the document's text from `text` and leaves
the chunk texts in `chunks`, so a test can run it and compare the chunks with the chunker's own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.chunkers.base import Chunker

#: the first line of every snippet: what it reads and what it leaves
HEAD = "# text: your document's text (a str); chunks: its chunk texts"
#: a tiktoken cl100k_base counter, as ChunkLens counts (`core.tokens.count_tokens`: no special token refused)
TOKEN_COUNTER = ('encoding = tiktoken.get_encoding("cl100k_base")', "",
                 "def count_tokens(t: str) -> int:", "    return len(encoding.encode(t, disallowed_special=()))", "")


def ours_only(chunker: Chunker) -> list[str]:
    """Comment lines for what ChunkLens adds around any chunker and a library's splitter does not do: the
    contextual header (`prefix=`) and title routing (`retrieval=route`)."""
    params = chunker.params()
    out = []
    if params.get("prefix", "none") != "none":
        out.append(f"# prefix={params['prefix']}: ChunkLens also embeds the document's "
                   f"{'title' if params['prefix'] == 'title' else 'title and heading path'} before each chunk; "
                   "the splitter below does not")
    if params.get("retrieval", "off") != "off":
        out.append(f"# retrieval={params['retrieval']}: ChunkLens searches only the chunks of the document whose "
                   "title the question names; that is retrieval, not the splitter below")
    return out


def library_snippet(chunker: Chunker, imports: Sequence[str], body: Sequence[str]) -> str:
    """A library's snippet: the head line, `imports`, what ChunkLens adds that the library does not (as
    comments), then `body`, which ends by setting `chunks`."""
    return "\n".join([HEAD, *imports, "", *ours_only(chunker), *body]) + "\n"


def chunklens_snippet(chunker: Chunker) -> str:
    """The lines that build `chunker` from its spec with ChunkLens's core and chunk one document: the public way
    (`make_chunker`, `chunk_documents`), with the services it needs built from the default settings. `page` cuts
    at a PDF's pages, so its document is read from a file."""
    needs = tuple(n for n in chunker.needs if n != "embedder")  # the embedder is always built
    services = ["from core.services import build_services", "from core.settings import Settings"] \
        if chunker.needs else []
    head = "# manual.pdf: your PDF; chunks: its pages' texts" if chunker.name == "page" else HEAD
    lines = [head, f"# no library cuts as {chunker.name} does: run it through ChunkLens's core (in its checkout)",
             "import core.catalog  # noqa: F401  (registers every chunker)",
             "from core.chunkers.registry import make_chunker",
             *(["from core.ingest.documents import load_file"] if chunker.name == "page" else []),
             "from core.pipeline import chunk_documents",
             *([] if chunker.name == "page" else ["from core.schema.documents import Document"]),
             *services, ""]
    if chunker.needs:
        lines += [f"services = build_services(Settings(), needs={json.dumps(needs)})  # the default settings' "
                  "embedder and models", f"chunker = make_chunker({json.dumps(chunker.spec)}, services.context())"]
    else:
        lines.append(f"chunker = make_chunker({json.dumps(chunker.spec)})")
    if chunker.name == "page":
        lines.append('doc = load_file("manual.pdf")')
    else:
        lines.append('doc = Document("manual", "My manual", text)  # an id, the title, the text')
    lines += ["run = chunk_documents([doc], chunker)", "chunks = [c.text for c in run.parents()]"]
    return "\n".join(lines) + "\n"
