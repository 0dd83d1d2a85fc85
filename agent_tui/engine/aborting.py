"""Racing work against the user's abort (Esc / Ctrl+C), shared by the loop and compaction."""

from __future__ import annotations

import asyncio
from typing import Any


async def race_abort(awaitable: Any, abort: asyncio.Event, aborted: BaseException) -> Any:
    """The result of `awaitable`, unless `abort` is set first: then the work is cancelled,
    awaited until it has stopped (so connections close and processes die), and `aborted`
    is raised."""
    task = asyncio.ensure_future(awaitable)
    if abort.is_set():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise aborted
    waiter = asyncio.ensure_future(abort.wait())
    try:
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        waiter.cancel()
        raise
    if task in done:
        waiter.cancel()
        return task.result()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    raise aborted
