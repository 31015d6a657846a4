"""Long work on a page: a status box with a progress bar, and the callback `core` reports progress through."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import streamlit as st

Progress = Callable[[str, int, int], None]


@contextmanager
def progress_status(label: str, text: Callable[[str, int, int], str] = lambda name, done, total: name
                    ) -> Iterator[tuple[Any, Progress]]:
    """`st.status(label)`, expanded, with a bar under it; yields the status (to set its end label) and the
    `progress(name, done, total)` callback that moves the bar, its text made by `text(name, done, total)`."""
    with st.status(label, expanded=True) as status:
        bar = st.progress(0.0)

        def progress(name: str, done: int, total: int) -> None:
            bar.progress(done / max(total, 1), text=text(name, done, total))

        yield status, progress
