"""After a fork bomb is stopped by its timeout, nothing of it is left and the next Bash call works.

The bomb is bounded (a depth and a count, and `ulimit -u` where it binds) so that a regression
cannot take the machine down: a few hundred processes, killed within the timeout's grace."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agent_tui.engine.loop.query import TerminalReason
from agent_tui.engine.messages import check_history
from agent_tui.engine.models.anthropic import AnthropicModel
from agent_tui.engine.permissions.policy import PermissionAnswer, PermissionPolicy
from agent_tui.engine.session import Session, SessionOptions
from agent_tui.tools.registry import default_tools
from agent_tui.tools.sandbox import SandboxConfig, availability
from tests.engine_helpers import FAST_RETRY, auto_answer, tool_results
from tests.loopback import reply, tool_use

MARK = "61.4173"  # the bomb's processes sleep this long: how the test finds any left behind

# A tree of subshells two wide and six deep, each leaf asleep, and a loop that forks sleepers
# while the tree grows: about 250 processes, all in the command's process group.
BOMB = (
    "ulimit -u 600 2>/dev/null; "
    "b() { if [ \"$1\" -gt 0 ]; then b $(($1 - 1)) & b $(($1 - 1)) & wait; else sleep " + MARK + "; fi; }; "
    "i=0; while [ $i -lt 60 ]; do sleep " + MARK + " & i=$((i + 1)); done; "
    "b 6"
)


def leftovers() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if MARK.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("sandbox", [False, True], ids=["unsandboxed", "sandboxed"])
async def test_the_next_bash_call_works_after_a_fork_bomb_times_out(api, tmp_path, sandbox):
    if sandbox and not availability().ok:
        pytest.skip(f"no working bubblewrap: {availability().reason}")
    api.push(
        reply(tool_use("Bash", {"command": BOMB, "timeout": 1500}, id="t_bomb")),
        reply(tool_use("Bash", {"command": "echo still here", "timeout": 10_000}, id="t_after")),
        reply("Recovered."),
    )
    session = Session(
        model=AnthropicModel("claude-sonnet-4-6", base_url=api.url, api_key="test-key"),
        tools=default_tools(sandbox=SandboxConfig(enabled=sandbox)),
        cwd=tmp_path,
        policy=PermissionPolicy(mode="default"),
        options=SessionOptions(retry=FAST_RETRY),
    )
    auto_answer(session, PermissionAnswer("allow"))

    peak = 0

    async def watch() -> None:
        nonlocal peak
        while True:
            peak = max(peak, len(leftovers()))
            await asyncio.sleep(0.1)

    watcher = asyncio.create_task(watch())
    began = time.monotonic()
    try:
        terminal = await session.submit("fork away")
    finally:
        watcher.cancel()
    await session.aclose()

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "Recovered."
    [bomb] = tool_results(api.requests[1].body)
    assert bomb["is_error"] is True and "timed out after 1500ms" in str(bomb["content"])
    [after] = tool_results(api.requests[2].body)
    assert not after.get("is_error") and "still here" in str(after["content"])
    assert time.monotonic() - began < 30
    assert peak > 60  # the bomb really forked
    assert leftovers() == []
    assert check_history(session.history) == []

