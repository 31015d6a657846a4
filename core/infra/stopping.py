"""The stop flag of the chunk run the current code works for, readable from any depth of a chunker.

A chunk run that the app's Stop (or a rerun) gave up must end at its next check. Between documents the pipeline
asks the chunker's context (`ChunkerContext.check_stop`); inside one document the long steps are deep in a
method's code (CHOP learning a library and deciding window after window, LGMGC's forward passes, an embedder's
batches, an LLM's batched requests), which has no context at hand. So the run's flag is also held in a context
variable for as long as the run chunks (`stopping`), and any loop that may run long calls `check_stop()` each
step: one flag read. Threads a run starts for its work either copy the context (`contextvars.copy_context`) or
take a checker made in the run's thread (`stop_checker`), as the LLM client's request pool does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from core.infra.errors import Stopped

#: what Stopped says when a chunk run was given up
STOPPED = "chunking stopped: the run it was for was stopped"

_SHOULD_STOP: ContextVar[Callable[[], bool] | None] = ContextVar("chunklens_should_stop", default=None)


@contextmanager
def stopping(should_stop: Callable[[], bool]) -> Iterator[None]:
    """Run the block as part of a run that stops once `should_stop()` turns True (or once the run the block is
    already part of is stopped)."""
    outer = _SHOULD_STOP.get()
    token = _SHOULD_STOP.set(should_stop if outer is None else lambda: should_stop() or outer())
    try:
        yield
    finally:
        _SHOULD_STOP.reset(token)


def check_stop() -> None:
    """Raise Stopped once the run this code works for was stopped (nothing when it runs under no run)."""
    should_stop = _SHOULD_STOP.get()
    if should_stop is not None and should_stop():
        raise Stopped(STOPPED)


def stop_checker() -> Callable[..., None]:
    """`check_stop` for the run of the calling thread, callable from any thread and with any arguments: a
    progress callback (`progress(done, total)`) that ends the work it reports on once the run is stopped."""
    should_stop = _SHOULD_STOP.get()

    def check(*_: Any) -> None:
        if should_stop is not None and should_stop():
            raise Stopped(STOPPED)

    return check
