"""`run_in_background` commands do not outlive agent-tui: the installed `agent-tui -p`
kills their process groups when the run ends, on SIGTERM and on Ctrl+C (SIGINT), and
the TUI kills them when it quits."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest

from agent_tui.engine import events as ev
from tests.engine_helpers import alive, tagged_pids
from tests.loopback import gated, hang, reply, text, tool_use
from tests.test_print_mode import AGENT, env_for
from tests.tui.helpers import finished, make_app, type_prompt, wait_until

# The backgrounded sleep carries a tag in its command line (its pid inside the sandbox is the PID
# namespace's, not the host's); it writes that pid as a sign that it started, then the shell waits on it.
TAG = f"{secrets.randbelow(10**8):08d}"
BACKGROUND = f"sleep 1000.{TAG} & echo $! > bg.pid; wait"



def poll(condition, what: str, attempts: int = 2400) -> None:
    """Bounded polling: up to `attempts` checks 50 ms apart."""
    for _ in range(attempts):
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting until {what}")


def background_pid(cwd: Path) -> int:
    """The host pid of the backgrounded sleep."""
    pid_file = cwd / "bg.pid"
    poll(lambda: pid_file.exists() and pid_file.read_text().strip(), "the background command wrote its pid")
    poll(lambda: _sleep_pid() is not None, "the background sleep is found on the host")
    pid = _sleep_pid()
    assert pid is not None
    return pid


def _sleep_pid() -> int | None:
    for pid in tagged_pids(TAG):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].endswith(b"sleep"):
                return pid
        except OSError:
            continue
    return None


def start_agent(api, cwd: Path) -> subprocess.Popen:
    args = ["-p", "start the server", "--permission-mode", "bypassPermissions", "--output-format", "json"]
    return subprocess.Popen([AGENT, *args], cwd=cwd, env=env_for(api.url), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


@pytest.fixture
def no_strays():
    """Kill any survivor so a failing run leaves no sleep behind."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_print_mode_kills_background_commands_when_the_run_ends(api, tmp_path, no_strays):
    answer, gate = gated(reply("Started it."))  # the run ends only once the command is up
    api.push(reply(tool_use("Bash", {"command": BACKGROUND, "run_in_background": True})), answer)

    proc = start_agent(api, tmp_path)
    pid = background_pid(tmp_path)
    no_strays.append(pid)
    gate.set()
    _, err = proc.communicate(timeout=120)

    assert proc.returncode == 0, err
    poll(lambda: not alive(pid), f"the background sleep ({pid}) is gone")


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_print_mode_kills_background_commands_when_signalled_mid_turn(api, tmp_path, no_strays, signum, code):
    api.push(reply(tool_use("Bash", {"command": BACKGROUND, "run_in_background": True})),
             hang(after=2, of=reply(text("never finishes"))))

    proc = start_agent(api, tmp_path)
    pid = background_pid(tmp_path)
    no_strays.append(pid)
    assert api.wait_requests(2, timeout=120)  # the model is streaming its second answer
    proc.send_signal(signum)
    proc.communicate(timeout=120)

    assert proc.returncode == code
    poll(lambda: not alive(pid), f"the background sleep ({pid}) is gone")


async def test_quitting_the_tui_kills_background_commands(api, tmp_path, no_strays):
    answer, gate = gated(reply(text("Started.")))
    api.push(reply(tool_use("Bash", {"command": BACKGROUND, "run_in_background": True})), answer)
    app, recorded = make_app(api, tmp_path, mode="bypassPermissions")
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "start the server")
        await wait_until(pilot, lambda: (tmp_path / "bg.pid").exists() and (tmp_path / "bg.pid").read_text())
        await wait_until(pilot, lambda: _sleep_pid() is not None)
        pid = _sleep_pid()
        assert pid is not None
        gate.set()
        await wait_until(pilot, finished(recorded))
        no_strays.append(pid)
        assert alive(pid)
        assert [e.is_error for e in recorded if isinstance(e, ev.ToolFinished)] == [False]
        await pilot.press("ctrl+q")
    poll(lambda: not alive(pid), f"the background sleep ({pid}) is gone")
