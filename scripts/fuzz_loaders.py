"""Coverage-guided fuzzing of the file loaders with atheris (libFuzzer for Python), beside the hypothesis tests
in tests/unit/test_loader_fuzz.py. Not part of the test suite: atheris runs until stopped or out of runs.

    pip install atheris==3.0.0          # a manylinux wheel for CPython 3.11; not in requirements-test.txt
    python scripts/fuzz_loaders.py -runs=200000 -max_len=4096 [corpus_dir]

The first input byte picks the file type, the rest is the file. Any exception other than DocumentError is a
crash: atheris prints it and writes the input to crash-<hash> for tests/unit/test_loader_fuzz.py to grow a case from.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

with atheris.instrument_imports():
    import docx  # noqa: F401  (instrumented so coverage guides the fuzzer through python-docx)
    import pypdfium2  # noqa: F401  (its Python side; PDFium itself is C++, fuzzed by OSS-Fuzz)

    from core.infra.errors import DocumentError
    from core.ingest.documents import SUPPORTED_SUFFIXES, load_bytes


def one_input(data: bytes) -> None:
    """Load `data` as a file of the type its first byte picks; only DocumentError may come out."""
    if not data:
        return
    name = "fuzz" + SUPPORTED_SUFFIXES[data[0] % len(SUPPORTED_SUFFIXES)]
    try:
        doc = load_bytes(name, data[1:])
    except DocumentError as exc:
        if not str(exc).startswith(f"{name}: ") or "\n" in str(exc):
            raise AssertionError(f"message is not one line naming the file: {exc!r}") from exc
        return
    if not isinstance(doc.text, str) or not doc.text.strip():
        raise AssertionError("a loaded document must hold text")


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
