"""The cyclic garbage collector, paced for a full-screen app (docs/architecture.md §8).

Textual draws each frame into strips whose caches refer back to them: every frame leaves
thousands of small reference cycles that only the cyclic collector frees.  At CPython's pace (a
young collection every 700 allocations) most of them are still in use when a young collection
runs, so they are promoted and die old, and full collections, which walk every object of the
app, ran every 2 s or so of a tool burst, 100-400 ms each, in the middle of frames: a key typed
then waited for one.  Collected every `YOUNG` allocations, a frame's strips are mostly dead by
the time they are looked at and freed young.  What was made before the app ran is frozen already
(`agent_tui/startup.py`); what it made since (the first screen, the warm-up thread's modules, a
resumed session's history) lives about as long as the app too, and is frozen when the first
prompt is sent, so the full collections that remain no longer walk it.  While an answer streams,
full collections wait altogether (`streaming.pause_full_collections`).
"""

from __future__ import annotations

import gc

# Allocations (less frees) between two young collections.
YOUNG = 10_000

# Set by `pace()`, for the one `freeze_start_up()` that follows (an app run in a test's process
# does neither: the process outlives the app).
_freeze_pending = False


def pace() -> None:
    """Young collections every `YOUNG` allocations (the older generations keep their pace); the
    first `freeze_start_up()` after this freezes."""
    global _freeze_pending
    young, middle, old = gc.get_threshold()
    if young:  # 0: the collector was turned off, and stays so
        gc.set_threshold(max(young, YOUNG), middle, old)
    _freeze_pending = True


def freeze_start_up() -> bool:
    """Keep what exists now out of every later collection (start-up's garbage, a few hundred
    objects, stays), once after `pace()`; whether it froze."""
    global _freeze_pending
    if not _freeze_pending:
        return False
    _freeze_pending = False
    gc.freeze()
    return True
