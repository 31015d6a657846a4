"""Build the ChunkLens demo set (`sample_data/qa/`, qa-spans v1) from the hand-written manuals.

Why this exists: ChunkLens ships its own small, offline demo set instead of borrowing real manuals. The
manuals in `manuals/` are fictional products written by the ChunkLens team; several are near-duplicate
siblings (two air conditioners, two fans, two cameras, plus a dehumidifier that shares their vocabulary),
so that chunks from different manuals collide in one vector store, which is the situation CHOP-style
tagging (category, product nouns, model number) is meant to fix.

Questions are written in `questions_source.jsonl` with their evidence as a verbatim quote. This script
turns each quote into exact character offsets (`start`, `end`, Python str offsets, end exclusive) and
fails loudly if a quote is missing from its manual or occurs more than once, so the gold spans can never
silently drift when a manual is edited.

Usage, from the repository root:  python sample_data/build.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MANUALS = HERE / "manuals"
SOURCE = HERE / "questions_source.jsonl"
OUT = HERE / "qa"

REQUIRED = ("qid", "product", "doc_id", "question", "answer", "evidence", "qa_type")
QA_TYPES = {"factual", "procedure", "troubleshooting"}


class BuildError(Exception):
    """A problem in the source files; the message names the file and line."""


#: the gold CNM of every manual: its category from the file name's first part, its model from the second
#: (`aircon-225B` -> air conditioner, 225B), so that CHOP's tags can be scored against them
CATEGORY_OF = {"aircon": "air conditioner", "camera": "camera", "dehumidifier": "dehumidifier", "fan": "fan"}


def gold_cnm(doc_id: str, where: str) -> dict[str, str]:
    kind, _, model = doc_id.partition("-")
    if kind not in CATEGORY_OF or not model:
        raise BuildError(f"{where}: name the file <kind>-<model>.md with kind one of {sorted(CATEGORY_OF)}")
    return {"category": CATEGORY_OF[kind], "model": model}


def read_manuals(folder: Path) -> list[dict[str, Any]]:
    """One corpus row per `*.md` file, sorted by name: doc_id is the stem, title the first line, and the gold
    CNM (`cnm`) from the file name."""
    paths = sorted(folder.glob("*.md"))
    if not paths:
        raise BuildError(f"{folder}: no manuals (*.md) found")
    docs = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        first = text.split("\n", 1)[0]
        if not first.startswith("# "):
            raise BuildError(f"{path}:1: the first line must be the title, starting with '# '")
        docs.append({"doc_id": path.stem, "title": first[2:].strip(), "text": text,
                     "cnm": gold_cnm(path.stem, str(path))})
    return docs


def read_source(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The question rows with their line numbers; blank lines are skipped."""
    if not path.is_file():
        raise BuildError(f"{path}: missing")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BuildError(f"{path}:{n}: not valid JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise BuildError(f"{path}:{n}: expected a JSON object")
        rows.append((n, obj))
    if not rows:
        raise BuildError(f"{path}: no questions")
    return rows


def build_questions(docs: list[dict[str, str]], rows: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Locate each evidence quote in its manual; every problem found is reported, then the build fails."""
    texts = {d["doc_id"]: d["text"] for d in docs}
    problems: list[str] = []
    seen: set[str] = set()
    out = []
    for n, obj in rows:
        where = f"{SOURCE.name}:{n}"
        missing = [k for k in REQUIRED if not isinstance(obj.get(k), str) or not obj[k].strip()]
        if missing:
            problems.append(f"{where}: missing or empty field(s): {', '.join(missing)}")
            continue
        qid, doc_id, evidence = obj["qid"], obj["doc_id"], obj["evidence"]
        if qid in seen:
            problems.append(f"{where}: duplicate qid '{qid}'")
        seen.add(qid)
        if obj["qa_type"] not in QA_TYPES:
            problems.append(f"{where}: qa_type '{obj['qa_type']}' is not one of {sorted(QA_TYPES)}")
        text = texts.get(doc_id)
        if text is None:
            problems.append(f"{where}: unknown doc_id '{doc_id}' (no manuals/{doc_id}.md)")
            continue
        count = text.count(evidence)
        if count != 1:
            what = "not found" if count == 0 else f"found {count} times (make the quote longer)"
            problems.append(f"{where}: qid '{qid}': evidence {what} in manuals/{doc_id}.md: {evidence[:80]!r}")
            continue
        start = text.index(evidence)
        out.append({
            "qid": qid,
            "question": obj["question"],
            "answer": obj["answer"],
            "references": [{"doc_id": doc_id, "start": start, "end": start + len(evidence)}],
            "product": obj["product"],
            "qa_type": obj["qa_type"],
        })
    if problems:
        raise BuildError(f"{len(problems)} problem(s):\n  " + "\n  ".join(problems))
    return out


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def readme(docs: list[dict[str, str]], questions: list[dict[str, Any]]) -> str:
    n_chars = sum(len(d["text"]) for d in docs)
    n_words = sum(len(d["text"].split()) for d in docs)
    per_doc = {d["doc_id"]: 0 for d in docs}
    for q in questions:
        per_doc[q["references"][0]["doc_id"]] += 1
    kinds: dict[str, int] = {}
    for q in questions:
        kinds[q["qa_type"]] = kinds.get(q["qa_type"], 0) + 1
    lines = [
        "# ChunkLens demo set: near-duplicate product manuals",
        "",
        "The project's own offline demo set, in qa-spans v1 format. It was written by the ChunkLens team for the",
        "demo; every product, brand (Nordwind, Lumora), number and error code is fictional, and no text was taken",
        "from a real manual. It may be used and changed with the project.",
        "",
        "It shows the problem CHOP addresses: many near-duplicate manuals in one vector store. Sibling manuals",
        "share most of their sentences word for word and differ only in numbers, button names, error codes and",
        "menu paths; most sections never name the model. A chunk from the middle of one manual therefore looks like",
        "the same chunk from its sibling, and only becomes distinguishable when tagged with its category, product",
        "nouns and model number. Most questions have different answers for the sibling models, so retrieving the",
        "sibling's chunk is wrong.",
        "",
        "## Counts",
        f"- documents: {len(docs)}, {n_chars:,} characters, {n_words:,} words",
        f"- questions: {len(questions)} ("
        + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) + ")",
        "",
        "| doc_id | title | characters | questions |",
        "|---|---|---|---|",
    ]
    for d in docs:
        lines.append(f"| `{d['doc_id']}` | {d['title']} | {len(d['text']):,} | {per_doc[d['doc_id']]} |")
    lines += [
        "",
        "## Format (qa-spans v1)",
        "- `corpus.jsonl`: one manual a line, `{\"doc_id\", \"title\", \"text\", \"cnm\"}`; `doc_id` is the file",
        "  name without `.md`, `title` the first line without `# `, `text` the whole file, `cnm` the manual's gold",
        "  tags `{\"category\", \"model\"}` (from the file name: `aircon-225B` is an air conditioner, model 225B),",
        "  against which CHOP's CNM tags are scored.",
        "- `questions.jsonl`: one question a line, `{\"qid\", \"question\", \"answer\", \"references\": [{\"doc_id\",",
        "  \"start\", \"end\"}], \"product\", \"qa_type\"}`. The question text does not name the product; `product`",
        "  holds it (for example `Nordwind 225B air conditioner`) so a benchmark can prepend it.",
        "  `qa_type` is `factual`, `procedure` or `troubleshooting`.",
        "",
        "## How the gold spans are made",
        "Generated by `sample_data/build.py` from `sample_data/manuals/*.md` and",
        "`sample_data/questions_source.jsonl`; do not edit the files in this folder by hand. Each question's",
        "evidence is a verbatim quote of one to three sentences; the script finds it in its manual and records",
        "its Python string offsets (`start`, `end`, end exclusive). The build fails if a quote is missing or",
        "occurs more than once in its manual, so every span is exact and unambiguous.",
        "",
        "Rebuild from the repository root: `python sample_data/build.py`.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    try:
        docs = read_manuals(MANUALS)
        questions = build_questions(docs, read_source(SOURCE))
    except BuildError as exc:
        print(f"build.py: FAILED: {exc}", file=sys.stderr)
        return 1
    OUT.mkdir(exist_ok=True)
    write_jsonl(OUT / "corpus.jsonl", docs)
    write_jsonl(OUT / "questions.jsonl", questions)
    (OUT / "README.md").write_text(readme(docs, questions), encoding="utf-8", newline="\n")
    n_chars = sum(len(d["text"]) for d in docs)
    print(f"wrote {OUT}: {len(docs)} documents ({n_chars:,} characters), {len(questions)} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
