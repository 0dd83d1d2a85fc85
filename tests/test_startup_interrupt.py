"""Ctrl+C while `agent-tui` starts: exit status 130 and no traceback, wherever start-up was."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.loopback import hang

AGENT = str(Path(sys.executable).with_name("agent-tui"))


def started_agent_code(pid: int) -> bool:
    """The process is inside agent-tui's own start-up: `agent_tui.cli` has begun importing
    (asyncio's extension module is mapped; the interpreter's boot before the entry point
    does not load it)."""
    try:
        return "_asyncio" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
@pytest.mark.parametrize("after", [0.0, 0.05, 0.2, 0.5])
def test_ctrl_c_during_start_up_exits_130_without_a_traceback(api, tmp_path, after):
    api.push(hang())  # if start-up is already over, the interrupt lands during the request
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key", HOME=str(tmp_path))
    proc = subprocess.Popen([AGENT, "-p", "hi"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        while proc.poll() is None and not started_agent_code(proc.pid):
            time.sleep(0.001)
        time.sleep(after)  # a point somewhere in the imports, settings, or the first request
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


SWALLOWED = """
import os, signal, weakref
from agent_tui import startup

class Thing:
    pass

def interrupt_inside_the_callback(_ref):
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(100_000):  # the handler runs at the next bytecode boundary, in here
        pass

startup.begin()
thing = Thing()
ref = weakref.ref(thing, interrupt_inside_the_callback)
del thing  # the callback runs, and Python drops its KeyboardInterrupt
first, second = startup.end(), startup.end()
print(ref() is None, first, second, signal.getsignal(signal.SIGINT) is signal.default_int_handler)
"""


def test_an_interrupt_python_swallows_in_a_weakref_callback_still_counts():
    """The import system runs weakref callbacks; Python prints and drops what they raise.
    (In a child process: the signal must not reach the test runner.)"""
    out = subprocess.run([sys.executable, "-c", SWALLOWED], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "KeyboardInterrupt" not in out.stderr  # dropped, and quietly
    assert out.stdout.split() == ["True", "True", "False", "True"]  # seen once, then the default handler
