"""`rewind_files` outside the full screen: Claude's Agent SDK (the real package, with
`enable_file_checkpointing`) names a prompt by the uuid its replayed user message carries and gets
the files back as they were just before it; print mode does it with `--resume ID --rewind-files UUID`.
As in Claude Code, print mode and the SDK take checkpoints only when CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING
is set (what `enable_file_checkpointing` sets)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.loopback import reply, tool_use
from tests.test_print_mode import AGENT, env_for, run

pytestmark = pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
                                reason="git is not installed")
sdk = pytest.importorskip("claude_agent_sdk")
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, UserMessage  # noqa: E402


def _options(api, cwd: Path, **extra: Any) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(cli_path=AGENT, cwd=str(cwd), env=env_for(api.url), permission_mode="bypassPermissions",
                              extra_args={"replay-user-messages": None}, **extra)


def _bash(command: str, n: int) -> list:
    return [reply(tool_use("Bash", {"command": command}, id=f"toolu_{n}")), reply(f"ran {n}")]


async def _prompt(client: ClaudeSDKClient, text: str) -> str:
    """Run one prompt; the uuid its replayed user message carries."""
    await client.query(text)
    uuids = [m.uuid for m in [m async for m in client.receive_response()]
             if isinstance(m, UserMessage) and m.uuid and isinstance(m.content, str)]
    assert len(uuids) == 1, uuids
    return uuids[0]


async def test_the_sdk_rewinds_the_files_to_just_before_a_prompt(api, tmp_path):
    api.push(*_bash("echo one > notes.txt", 1), *_bash("echo two > notes.txt && echo new > extra.txt", 2))

    async with ClaudeSDKClient(_options(api, tmp_path, enable_file_checkpointing=True)) as client:
        first = await _prompt(client, "write one")
        second = await _prompt(client, "write two")
        assert (tmp_path / "notes.txt").read_text() == "two\n"
        preview = await client._query._send_control_request(  # the dry run the TypeScript SDK offers
            {"subtype": "rewind_files", "user_message_id": second, "dry_run": True})
        assert (tmp_path / "notes.txt").read_text() == "two\n"
        await client.rewind_files(second)
        after_second = {p.name: p.read_text() for p in tmp_path.iterdir() if p.is_file()}
        await client.rewind_files(first)
        after_first = sorted(p.name for p in tmp_path.iterdir() if p.is_file())

    assert preview["canRewind"] and sorted(preview["filesChanged"]) == ["extra.txt", "notes.txt"]
    assert preview["insertions"] == 1 and preview["deletions"] == 2
    assert after_second == {"notes.txt": "one\n"}
    assert after_first == []


async def test_without_file_checkpointing_the_sdk_is_told_rewinding_is_off(api, tmp_path):
    api.push(*_bash("echo one > notes.txt", 1))

    async with ClaudeSDKClient(_options(api, tmp_path)) as client:
        first = await _prompt(client, "write one")
        with pytest.raises(Exception, match="File rewinding is not enabled"):
            await client.rewind_files(first)
        with pytest.raises(Exception, match="File rewinding is not enabled"):
            await client.rewind_files("not-a-prompt")

    assert (tmp_path / "notes.txt").read_text() == "one\n"


async def test_an_unknown_message_id_is_refused(api, tmp_path):
    api.push(*_bash("echo one > notes.txt", 1))

    async with ClaudeSDKClient(_options(api, tmp_path, enable_file_checkpointing=True)) as client:
        await _prompt(client, "write one")
        with pytest.raises(Exception, match="No file checkpoint found for this message"):
            await client.rewind_files("00000000-0000-0000-0000-000000000000")


def test_print_mode_rewinds_a_resumed_session_with_rewind_files(api, tmp_path):
    env = env_for(api.url, CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING="1")
    api.push(*_bash("echo one > notes.txt", 1), *_bash("echo two > notes.txt", 2))
    mode = ["--permission-mode", "bypassPermissions", "--output-format", "stream-events"]

    first = run(["-p", "write one", *mode], tmp_path, env)
    events = [json.loads(line) for line in first.stdout.splitlines()]
    session_id = next(e["session_id"] for e in events if e["type"] == "session_started")
    run(["-p", "write two", "--resume", session_id, *mode], tmp_path, env)
    stored = _prompt_uuids(tmp_path, session_id)
    refused = run(["-p", "--resume", session_id, "--rewind-files", "no-such-prompt"], tmp_path, env)
    rewound = run(["-p", "--resume", session_id, "--rewind-files", stored[1]], tmp_path, env)

    assert refused.returncode == 1 and "is not a user message in this session" in refused.stderr
    assert len(stored) == 2 and stored[0] == next(e["uuid"] for e in events if e["type"] == "user_message")
    assert rewound.returncode == 0, rewound.stderr
    assert rewound.stdout.startswith(f"Files rewound to state at message {stored[1]}")
    assert (tmp_path / "notes.txt").read_text() == "one\n"


def test_rewind_files_needs_a_session_to_resume(tmp_path):
    out = subprocess.run([AGENT, "-p", "--rewind-files", "abc"], cwd=tmp_path, env=env_for(), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "--rewind-files requires --resume" in out.stderr


def _prompt_uuids(cwd: Path, session_id: str) -> list[str]:
    """The uuids of the session's prompts, from its transcript's user_message events."""
    from agent_tui.engine.store import find_session, project_dir

    path = find_session(project_dir(cwd), session_id)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [r["event"]["uuid"] for r in records if r.get("type") == "event" and r["event"]["type"] == "user_message"]
