"""`agent_tui.ask()`: one prompt from a script or a test, as an async iterator of the engine's events.

The seeds' first layer: `ask` -> `Session.submit` (the QueryEngine) -> `query` -> the loop's
phases, each passing its events outward.  The session is the one `agent-tui -p` builds (settings,
memory files, tools, MCP servers, the transcript), so a script sees what a person would; the last
item is the `Result` (docs/architecture.md, "Front ends").
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from .engine import Event, PermissionRequest, Result
from .session_config import SessionConfig

# `can_use_tool(tool_name, input) -> True (allow) | False (deny) | a message (deny, told to the model)`.
CanUseTool = Callable[[str, dict[str, Any]], Awaitable[bool | str]]


async def ask(
    prompt: str,
    *,
    cwd: str | Path | None = None,
    model: str | None = None,
    permission_mode: str | None = None,
    allowed_tools: Sequence[str] = (),
    disallowed_tools: Sequence[str] = (),
    max_turns: int | None = None,
    system_prompt: str | None = None,
    append_system_prompt: str | None = None,
    mcp_servers: dict[str, Any] | None = None,
    offline: bool = False,
    can_use_tool: CanUseTool | None = None,
    json_schema: dict[str, Any] | None = None,
) -> AsyncIterator[Event | Result]:
    """Answer `prompt` in `cwd`; yields every bus event of the run, then the `Result`.

    Nobody is asked about a tool call the rules leave undecided: it is denied (as with `-p`), unless
    `can_use_tool` answers it.  With `json_schema` (an object schema) the answer is also JSON that
    matches it, in `Result.structured_output`."""
    config = SessionConfig.from_options(
        cwd=Path(cwd or Path.cwd()), model=model, permission_mode=permission_mode,
        allowed_tools=list(allowed_tools), disallowed_tools=list(disallowed_tools), max_turns=max_turns,
        system_prompt=system_prompt, append_system_prompt=append_system_prompt, mcp_servers=mcp_servers,
        offline=offline, interactive=can_use_tool is not None, json_schema=json_schema,
    )
    session = config.build()
    subscription = session.subscribe("ask")
    if can_use_tool is not None:
        session.add_listener(lambda event: _answer(event, can_use_tool))
    run = asyncio.ensure_future(session.submit(prompt))
    try:
        while True:
            event = subscription.get_nowait()
            if event is not None:
                yield event
                continue
            if run.done():
                break
            # Woken by the next event, or by the end of the run (whatever it published is queued by then).
            getter = asyncio.ensure_future(subscription.get())
            done, _ = await asyncio.wait({getter, run}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                yield getter.result()
            else:
                getter.cancel()
                await asyncio.gather(getter, return_exceptions=True)
        yield Result.of(session, await run)
    finally:
        if not run.done():
            session.interrupt()
            await asyncio.gather(run, return_exceptions=True)
        subscription.close()
        await session.aclose()


def _answer(event: Event, can_use_tool: CanUseTool) -> None:
    if isinstance(event, PermissionRequest) and event.future is not None:
        asyncio.ensure_future(_resolve(event, can_use_tool))


async def _resolve(event: PermissionRequest, can_use_tool: CanUseTool) -> None:
    from .engine import PermissionAnswer

    try:
        verdict = await can_use_tool(event.tool_name, dict(event.input))
    except Exception as exc:  # the script's callback failing denies, and says why
        verdict = f"Permission check failed: {type(exc).__name__}: {exc}"
    if verdict is True:
        answer = PermissionAnswer("allow")
    else:
        answer = PermissionAnswer("deny", message=verdict if isinstance(verdict, str) and verdict else None)
    if event.future is not None and not event.future.done():
        event.future.set_result(answer)
