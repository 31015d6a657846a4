"""The scorers' window memo: `python -m bench.scorer` clears it to time every window afresh after lg has scored
them, so a cleared memo must forget every window it kept (and keep new ones again)."""

from core.methods.lgmgc.scoring import ScoredWindow, WindowMemo


def test_a_cleared_memo_forgets_its_windows_and_keeps_new_ones():
    memo = WindowMemo()
    scored = ScoredWindow([0.25, 0.75], 7)
    memo.keep("a window", [3, 8], scored)
    assert memo.get("a window", [3, 8]) is scored

    memo.clear()

    assert memo.get("a window", [3, 8]) is None
    assert memo.keep("a window", [3, 8], scored) is scored and memo.get("a window", (3, 8)) is scored
