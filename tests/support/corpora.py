"""Small data written for tests: qa-spans folders (`write_folder`, the two-manual `tiny_folder`), the rows of a
two-document set as uploaded (`DOCS`, `GOOD_QS`, `jsonl`), and a short manual to upload in the app (`MANUAL`)."""

from __future__ import annotations

import json
from pathlib import Path


def write_folder(path, docs, questions):
    path.mkdir(parents=True, exist_ok=True)
    (path / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    (path / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in questions) + "\n")
    return path


TEXT_A = ("Clean the air filter every two weeks. Rinse it in lukewarm water and let it dry in the shade.\n\n"
          "Error E4 means the indoor temperature sensor failed. Switch the unit off and call service.\n\n"
          "The remote control uses two AAA batteries.")
TEXT_B = ("Charge the camera battery for three hours before first use.\n\n"
          "Press the shutter button halfway to focus, then fully to take the picture.")


def tiny_folder(path: Path) -> Path:
    """Two short manuals (an air conditioner, a camera) and three questions about them, as a qa-spans folder at
    `path` (the set is named after the folder)."""
    def ref(doc, text, phrase):
        start = text.index(phrase)
        return {"doc_id": doc, "start": start, "end": start + len(phrase)}

    questions = [
        {"qid": "q1", "question": "How often do I clean the filter?", "product": "AC 225B",
         "references": [ref("ac", TEXT_A, "Clean the air filter every two weeks.")]},
        {"qid": "q2", "question": "What does E4 mean?", "product": "AC 225B",
         "references": [ref("ac", TEXT_A, "Error E4 means the indoor temperature sensor failed.")]},
        {"qid": "q3", "question": "How long does charging take?", "product": "Camera X100",
         "references": [ref("cam", TEXT_B, "Charge the camera battery for three hours before first use.")]},
    ]
    docs = [{"doc_id": "ac", "title": "AC", "text": TEXT_A}, {"doc_id": "cam", "title": "Cam", "text": TEXT_B}]
    return write_folder(path, docs, questions)


DOCS = [{"doc_id": "a", "title": "A", "text": "Filter every two weeks."},
        {"doc_id": "b", "title": "B", "text": "Battery charges in three hours."}]
GOOD_QS = [{"qid": "1", "question": "How long to charge?", "references": [{"doc_id": "b", "start": 19, "end": 30}]}]


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


MANUAL = (b"# Breeze 200 fan user manual\n\nClean the fan blades of the Breeze 200 every month with a dry cloth.\n\n"
          b"The remote control takes two AAA batteries. Press the timer button to stop the fan after 8 hours.\n")
