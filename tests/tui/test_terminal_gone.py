"""The terminal goes away under a running agent-tui (a closed window, an ssh drop,
`tmux kill-server`): the process saves its session and exits within a second or two,
never stuck writing to the dead terminal, never left spinning or holding its lock.

Each round starts the installed `agent-tui` in a tmux server of its own, talking to a
loopback model that is mid-stream or mid-tool, and kills the pane or the whole server.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent_tui.engine.store import load_transcript
from tests.loopback import LoopbackServer, hang, reply, text, tool_use

from .test_tmux import AGENT, FIRST_PAINT, STEP, WELCOME, Tmux, clean_env

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc to find the processes"),
]

ROUNDS = 20
AT_ONCE = 4
GONE_WITHIN = 2.0
STREAMED = "The answer streams in"
STORY = STREAMED + ", and it never reaches its end because the server stalls."


def _agents_of(data_dir: Path) -> list[int]:
    """Pids of agent-tui processes started for this round (found by their data folder)."""
    wanted = f"AGENT_TUI_DATA_DIR={data_dir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            # The program (or the script an interpreter runs), not the tmux server's socket name.
            if not any(os.path.basename(arg) == b"agent-tui" for arg in argv[:2]):
                continue
            if wanted in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
    return found


def _children_in(project: Path) -> list[int]:
    """Pids of processes still working in the round's project (the Bash tool's command)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if Path(os.readlink(entry / "cwd")) == project and _state(int(entry.name)) not in ("Z", "X"):
                    found.append(int(entry.name))
    return found


def _state(pid: int) -> str:
    with contextlib.suppress(OSError):
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    return "gone"


def _exited(pid: int) -> bool:
    """Whether every thread of the process has exited.

    A multi-threaded process's leader shows as a zombie while its other threads are
    still tearing down, and they hold its open files (the session lock among them)
    until the last one is gone; so a zombie leader alone is not an exit.
    """
    if _state(pid) == "gone":
        return True
    tasks = Path("/proc") / str(pid) / "task"
    try:
        threads = [entry.name for entry in tasks.iterdir()]
    except OSError:
        return True
    for tid in threads:
        with contextlib.suppress(OSError):
            state = (tasks / tid / "stat").read_text().rsplit(")", 1)[1].split()[0]
            if state not in ("Z", "X"):
                return False
    return True


def _round(n: int, root: Path) -> str:
    """One launch and kill; a description of the round."""
    home = root / f"round-{n:02d}"
    project = home / "project"
    project.mkdir(parents=True)
    mid_tool = n % 2 == 1
    kill_server = n % 4 < 2
    prompt = f"round {n} please"
    with LoopbackServer() as api:
        if mid_tool:
            api.push(reply(text("Running it."), tool_use("Bash", {"command": "sleep 30"}, id="toolu_sleep")))
        else:
            api.push(hang(after=16, of=reply(text(STORY), chunk=6)))
        tmux = Tmux(home)
        env = clean_env(api.url, home)
        data_dir = Path(env["AGENT_TUI_DATA_DIR"])
        try:
            tmux.start([AGENT, "--allowedTools", "Bash(sleep:*)"], project, env, (100, 30))
            tmux.wait_for(WELCOME, FIRST_PAINT)
            tmux.prompt(prompt)
            if mid_tool:
                tmux.wait_for(lambda s: "sleep 30" in s and "Running it." in s, STEP)
            else:
                tmux.wait_for(STREAMED, STEP)
            pids = _agents_of(data_dir)
            if mid_tool:  # the check for leftovers below can see the running command
                deadline = time.monotonic() + STEP
                while not _children_in(project) and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert _children_in(project), f"round {n}: the Bash command is not running"
            assert pids, f"round {n}: no agent-tui process found"
            killed = time.monotonic()
            if kill_server:
                tmux.kill()
            else:
                tmux.run("kill-pane", "-t", "agent", check=False)
            while (left := [p for p in pids if not _exited(p)]) and time.monotonic() - killed < 10:
                time.sleep(0.02)
            took = time.monotonic() - killed
            assert not left, f"round {n}: agent-tui {left} still running 10 s after its terminal went away"
            assert took < GONE_WITHIN, f"round {n}: agent-tui took {took:.2f}s to exit"
            # Nor is the command it was running left behind.
            while (orphans := _children_in(project)) and time.monotonic() - killed < GONE_WITHIN + 1:
                time.sleep(0.02)
            assert not orphans, f"round {n}: processes {orphans} still running in the project"
        finally:
            tmux.kill()
    # The session is on disk with the prompt, and its lock is free for a resume.
    transcripts = list(data_dir.rglob("*.jsonl"))
    assert len(transcripts) == 1, f"round {n}: transcripts {transcripts}"
    transcript = load_transcript(transcripts[0])
    first = transcript.messages[0]
    assert first["role"] == "user" and prompt in str(first["content"]), f"round {n}: {transcript.messages}"
    lock = transcripts[0].with_suffix(".lock")
    if lock.exists():
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if a process still holds it
        finally:
            os.close(fd)
    what = "mid-tool" if mid_tool else "mid-stream"
    how = "kill-server" if kill_server else "kill-pane"
    return f"round {n:2d}: {what:10s} {how:11s} gone in {took:.2f}s, {len(transcript.messages)} messages saved"


def test_agent_tui_exits_and_keeps_its_session_when_its_terminal_goes_away(tmp_path):
    with ThreadPoolExecutor(AT_ONCE) as pool:
        rounds = list(pool.map(lambda n: _round(n, tmp_path), range(ROUNDS)))
    print("\n" + "\n".join(rounds))
