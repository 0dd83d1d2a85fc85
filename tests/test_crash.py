"""Crash test: SIGKILL `agent-tui -p` at seeded random moments, then `--continue`.

Each run is a scripted four-turn session against the loopback server (text
streaming, parallel read-only tools, a shell command).  The process is killed
at a random moment after its transcript appeared (before that there is nothing
to lose).  Every message of the last request the server received was complete
before the kill; the transcript must hold all of them, its repaired history
must be valid, and `agent-tui -p --continue` must send them again and finish
its prompt.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_tui.engine.messages import check_history, normalize_for_api
from agent_tui.engine.store import load_transcript, sessions_in
from tests.counting import count
from tests.engine_helpers import uncached
from tests.loopback import LoopbackServer, reply, text, tool_use
from tests.test_print_mode import AGENT, env_for

SEED = 20_240_611
KILLS = 50
MAX_ATTEMPTS = 80
WORKERS = 4
CONTINUE_PROMPT = "CONTINUE-AFTER-CRASH"
CONTINUED = "Continued after the crash."
TURNS = 4
# Roughly how long one scripted turn lasts (streaming, then its tools).
TURN_SPAN = 0.25


def scripted(cwd: Path):
    def handler(body: dict, index: int):
        last = body["messages"][-1]
        if any(CONTINUE_PROMPT in b.get("text", "") for b in last["content"] if b.get("type") == "text"):
            return reply(CONTINUED)
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if turn == 0:
            return reply(
                text("I will look at the project files first, starting with the notes."),
                tool_use("Read", {"file_path": str(cwd / "a.txt")}, id="toolu_t0_read"),
                tool_use("Glob", {"pattern": "*.txt"}, id="toolu_t0_glob"),
                delay=0.004,
            )
        if turn == 1:
            return reply(
                text("Now a command, to see how the shell behaves here."),
                tool_use("Bash", {"command": "sleep 0.05; echo ran"}, id="toolu_t1_bash"),
                delay=0.004,
            )
        if turn == 2:
            return reply(
                text("One more look, in parallel again."),
                tool_use("Read", {"file_path": str(cwd / "b.txt")}, id="toolu_t2_read"),
                tool_use("Grep", {"pattern": "alpha", "path": str(cwd)}, id="toolu_t2_grep"),
                delay=0.004,
            )
        return reply(
            text("All done: the notes mention alpha, the command ran, and nothing else needs changing."),
            delay=0.004,
        )

    return handler


@dataclass
class Outcome:
    seed: int
    killed: bool
    delay: float
    requests_before_kill: int
    complete_messages: int
    lost: int
    history_problems: list[str]
    continue_ok: bool
    continue_problems: list[str]


def _text_prefix_matches(expected: dict, actual: dict) -> bool:
    """`actual` is `expected`, possibly with blocks appended (repair marker, the next prompt)."""
    return actual["role"] == expected["role"] and actual["content"][: len(expected["content"])] == expected["content"]


def _kept(expected: list[dict], actual: list[dict]) -> int:
    """How many of `expected` (a request's messages) `actual` carries, in order."""
    kept = 0
    for i, message in enumerate(expected):
        if i >= len(actual):
            break
        last = i == len(expected) - 1
        if actual[i] == message or (last and _text_prefix_matches(message, actual[i])):
            kept += 1
        else:
            break
    return kept


def _cpu_since(before: resource.struct_rusage) -> float:
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (now.ru_utime - before.ru_utime) + (now.ru_stime - before.ru_stime)


def one_run(root: Path, seed: int, turn: int | None = None) -> Outcome:
    """Kill in `turn` (-1: before the first request), or in a turn drawn from the seed."""
    rng = random.Random(seed)
    cwd = root / f"run-{seed}"
    data = root / f"data-{seed}"
    cwd.mkdir()
    (cwd / "a.txt").write_text("alpha notes\n")
    (cwd / "b.txt").write_text("beta notes, alpha again\n")
    with LoopbackServer() as srv:
        srv.handler = scripted(cwd)
        env = env_for(srv.url, AGENT_TUI_DATA_DIR=str(data))
        proc = subprocess.Popen(
            [AGENT, "-p", "Inspect the project and run a command", "--allowedTools", "Bash"],
            cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        # The transcript appears with the first message.  The kill comes in a random
        # turn (or before the first request), a random time after that turn began.
        deadline = time.monotonic() + 60
        while not list(data.glob("projects/*/*.jsonl")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        drawn = rng.randrange(-1, TURNS)
        turn = drawn if turn is None else turn
        if turn >= 0:
            srv.wait_requests(turn + 1, timeout=60)
        delay = rng.uniform(0.0, 0.03 if turn < 0 else TURN_SPAN)
        time.sleep(delay)
        killed = proc.poll() is None
        if killed:
            proc.kill()
        proc.wait(timeout=30)
        before = [uncached(r.body) for r in srv.requests]

        [folder] = data.glob("projects/*")
        [info] = sessions_in(folder)
        transcript = load_transcript(info.path)
        complete = before[-1]["messages"] if before else []
        stored = normalize_for_api(transcript.messages)
        lost = len(complete) - _kept(complete, stored)

        out = subprocess.run(
            [AGENT, "-p", "--continue", CONTINUE_PROMPT, "--output-format", "json"],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
        )
        sent = uncached(srv.requests[-1].body["messages"]) if len(srv.requests) > len(before) else []
        continue_problems = check_history(sent)
        if len(complete) - _kept(complete, sent):
            continue_problems.append("the request after --continue lost messages")
        if out.returncode != 0:
            continue_problems.append(f"exit {out.returncode}: {out.stderr.strip()[-300:]}")
        elif json.loads(out.stdout)["result"] != CONTINUED:
            continue_problems.append(f"unexpected result: {out.stdout[-300:]}")
        continue_ok = not continue_problems
    return Outcome(
        seed=seed,
        killed=killed,
        delay=delay,
        requests_before_kill=len(before),
        complete_messages=len(complete),
        lost=lost,
        history_problems=check_history(transcript.history),
        continue_ok=continue_ok,
        continue_problems=continue_problems,
    )


def report(outcomes: list[Outcome], started: float, cpu_before: resource.struct_rusage) -> list[Outcome]:
    killed = [o for o in outcomes if o.killed]
    print(
        f"\ncrash test: {len(outcomes)} runs, {len(killed)} killed by SIGKILL "
        f"(runs killed after 0..4 requests: {[sum(o.requests_before_kill == n for o in killed) for n in range(5)]}), "
        f"{sum(o.complete_messages for o in killed)} complete messages at the kills, "
        f"{sum(o.lost for o in outcomes)} lost, "
        f"{sum(o.continue_ok for o in outcomes)}/{len(outcomes)} --continue prompts succeeded, "
        f"{time.monotonic() - started:.1f}s ({_cpu_since(cpu_before):.0f} CPU-seconds in the agent-tui processes)"
    )
    count("crash-test runs", len(outcomes))
    assert [o for o in outcomes if o.lost] == []
    assert [o for o in outcomes if o.history_problems] == []
    assert [o for o in outcomes if not o.continue_ok] == []
    return killed


def test_a_kill_in_each_turn_loses_no_complete_message(tmp_path):
    """The quick version: one kill before the first request and one in each turn."""
    started, cpu_before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(lambda t: one_run(tmp_path, SEED + t + 1, turn=t), range(-1, TURNS)))
    report(outcomes, started, cpu_before)


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_no_complete_message(tmp_path):
    started, cpu_before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    outcomes: list[Outcome] = []
    seeds = iter(range(SEED, SEED + MAX_ATTEMPTS))
    with ThreadPoolExecutor(max_workers=min(WORKERS, (os.cpu_count() or 2) * 2)) as pool:
        while sum(o.killed for o in outcomes) < KILLS:
            batch = [next(seeds) for _ in range(KILLS - sum(o.killed for o in outcomes))]
            outcomes.extend(pool.map(lambda s: one_run(tmp_path, s), batch))

    killed = report(outcomes, started, cpu_before)
    assert len(killed) >= KILLS
    # The kills landed all over the session: before the first request and in every turn.
    assert len({o.requests_before_kill for o in killed}) >= 4
