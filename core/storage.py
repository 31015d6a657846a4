"""One way to open the small SQLite caches in the workspace (vectors, LLM answers): WAL mode so several
app sessions and a CLI run can share them, a generous busy timeout, usable from worker threads."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def open_cache(path: Path, table_sql: str) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(table_sql)
    db.commit()
    return db
