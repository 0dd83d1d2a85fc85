"""TUI benchmark (not a timed test): `python -m tests.bench.bench_tui [--repeat N]`.

Both programs run full-screen in a pseudo-terminal (120x40) against the
loopback Messages-API server (in its own process): agent-tui with an API key
(the real transport, not the demo model) and, when it is found (`CLAUDE_CODE_BIN`
or `claude` on PATH, see `peer.py`), Claude Code, interleaved run by run, so
that load from elsewhere hits both alike, after one unmeasured start of each
(a person's machine has run the program before).  Each figure is the median of
`--repeat` runs (default 3), and the ratio column is agent-tui / Claude Code.

- first paint: spawn to the first frame (the first output that draws text),
  beside that of a minimal Textual app on the same Python (`floor_app.py`):
  the floor under any Textual program on this machine;
- idle RSS: resident memory once the first screen has settled;
- a 330 KB Markdown answer streamed as fast as the server sends it: Enter to
  its last line in the terminal's output, the CPU seconds the program spent
  meanwhile, and its peak RSS;
- a 6 KB answer at a fast model's pace, 12 characters every 20 ms: the share
  of a core the program used while it streamed, and its screen updates per
  second (`--only steady`);
- a 300-turn session (agent-tui only, in-process): RSS, and key-press-to-paint
  latency at the end of it (`--only session`);
- `-c` of a 500-turn session (`--only resume`): spawn to its last screen, the CPU
  by then, and a key typed at the first frame to its echo on screen;
- a prompt's cost as the session grows (`--only turns`): `-c` of a stored session
  of 10, 150 and 500 turns, then five prompts, each answered with a short text: the
  CPU from Enter until the answer's last line is on screen and 0.3 s after, and
  the wall time to that line (medians of the five).  The sessions are written by
  `sessions.py` in each program's own format;
- keys typed during a 300-tool run (`--only keys`): a prompt the server answers with Read
  calls of small files in the project, five an answer, while a key is typed about every
  0.1 s; each key's time from its write to the pty to the first output that draws it
  (median, 99th percentile and maximum over all keys of all runs);
- `@` file completion in a 50,000-file project (`--only fuzzy`): after a first search (the
  file list is read once), each of a few words typed after `@` (whole words, and characters in
  order) is timed from its write to the pty to the first output that shows the file it names
  (median and maximum over all words of all runs).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.bench.peer import (
    PtyApp,
    agent_env,
    claude_env,
    claude_version,
    compile_agent,
    find_agent,
    find_claude,
    interpreter_of,
)

TARGETS = {"first paint": (0.6, 1.0), "last line": (None, 1.0), "cpu": (None, 0.8), "rss": (100.0, None),
           "frame": (0.05, None)}
WORDS = "the agent reads files streams tokens renders markdown while tools run in parallel and the timeline shows each call".split()
LAST_LINE = b"THE-LAST-LINE"
PROMPT = "write a very long answer"
# The paced answer: its size, and the server's pace (characters per delta, seconds between deltas).
STEADY_CHARS = 6000
STEADY_PACE = {"chunk": 12, "delay": 0.02}


def big_markdown(target: int = 330_000, seed: int = 7, last: str = LAST_LINE.decode()) -> str:
    rnd = random.Random(seed)
    parts: list[str] = []
    size = n = 0
    while size < target:
        n += 1
        kind = n % 6
        if kind == 0:
            part = f"## Section {n}\n\n"
        elif kind == 1:
            part = " ".join(rnd.choice(WORDS) for _ in range(60)) + ".\n\n"
        elif kind == 2:
            part = "".join(f"- item {j}: " + " ".join(rnd.choice(WORDS) for _ in range(8)) + "\n" for j in range(5)) + "\n"
        elif kind == 3:
            part = "```python\n" + "".join(f"def f{n}_{j}(x):\n    return x * {j}\n" for j in range(4)) + "```\n\n"
        elif kind == 4:
            part = "| a | b |\n| --- | --- |\n" + "".join(f"| {j} | {rnd.choice(WORDS)} |\n" for j in range(4)) + "\n"
        else:
            part = "> " + " ".join(rnd.choice(WORDS) for _ in range(30)) + "\n\n"
        parts.append(part)
        size += len(part)
    parts.append(f"{last} of the answer.\n")
    return "".join(parts)


def _app(url: str, cwd: Path):
    from agent_tui.engine.models.anthropic import AnthropicModel
    from agent_tui.engine.session import Session
    from agent_tui.tui.app import AgentApp

    session = Session(model=AnthropicModel("claude-sonnet-4-6", base_url=url, api_key="bench"), tools=[], cwd=cwd)
    return AgentApp(session)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextlib.contextmanager
def loopback(specs: list[dict], folder: Path, *, handler: str | None = None) -> Iterator[str]:
    """`python -m tests.loopback` serving `specs` in a cycle (or answering with `handler`,
    "module:name", which reads `folder` from BENCH_FOLDER); its URL."""
    script = folder / "script.json"
    script.write_text(json.dumps(specs))
    how = ["--handler", handler] if handler else ["--cycle", "--script", str(script)]
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.loopback", "--port", "0", *how],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "BENCH_FOLDER": str(folder)},
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait(timeout=10)


Launcher = Callable[..., PtyApp]
# Seconds of quiet before each run.
SETTLE = 2.0


def launch_agent(url: str, work: Path, *args: str) -> PtyApp:
    return PtyApp([find_agent(), *args], agent_env(url), work)


def launch_floor(url: str, work: Path) -> PtyApp:
    """The minimal Textual app (`floor_app.py`) on agent-tui's interpreter."""
    return PtyApp([interpreter_of(find_agent()), str(Path(__file__).with_name("floor_app.py"))], agent_env(url), work)


def launcher_for_claude(exe: str) -> Launcher:
    def launch(url: str, work: Path, *args: str) -> PtyApp:
        return PtyApp([exe, *args], claude_env(url, work), work)

    return launch


def one_run(launch: Launcher, url: str, work: Path) -> dict[str, float]:
    """Start, settle, stream the long answer; the figures of one run."""
    with launch(url, work) as app:
        paint, paint_cpu = app.first_paint()
        app.settle(0.5)
        idle_rss = app.rss_mb()
        app.submit(PROMPT)
        since = len(app.output)
        cpu0, t0 = app.cpu(), time.monotonic()
        app.track()
        t1 = app.wait_text(LAST_LINE, since)
        cpu = app.cpu() - cpu0
        pause, pause_cpu = app.longest_pauses()
        fps, p95_cpu = app.frame_stats()
        return {"paint": paint, "paint_cpu": paint_cpu, "idle_rss": idle_rss, "last_line": t1 - t0, "cpu": cpu,
                "peak_rss": app.peak_rss_mb(), "pause": pause, "pause_cpu": pause_cpu, "fps": fps,
                "p95_cpu": p95_cpu}


def floor_run(launch: Launcher, url: str, work: Path) -> dict[str, float]:
    """The floor's first paint and idle RSS (it answers nothing)."""
    with launch(url, work) as app:
        paint, paint_cpu = app.first_paint()
        app.settle(0.5)
        return {"paint": paint, "paint_cpu": paint_cpu, "idle_rss": app.rss_mb()}


def steady_run(launch: Launcher, url: str, work: Path) -> dict[str, float]:
    """Start, settle, stream the paced answer; the figures of one run."""
    with launch(url, work) as app:
        app.first_paint()
        app.settle(0.5)
        app.submit(PROMPT)
        since = len(app.output)
        cpu0, t0 = app.cpu(), time.monotonic()
        app.track()
        wall = app.wait_text(LAST_LINE, since) - t0
        fps, _ = app.frame_stats()
        _, gap_cpu = app.longest_pauses()
        return {"steady_core": (app.cpu() - cpu0) / wall, "steady_fps": fps, "steady_gap": gap_cpu}


def warm_up(launch: Launcher, url: str, work: Path) -> None:
    """One start that is not measured, as the person's machine has started the program
    before: files in the page cache for both, agent-tui's parsed CSS in its cache folder."""
    with launch(url, work) as app:
        app.first_paint()
        app.settle(1.0)


def side_by_side(programs: dict[str, Launcher], repeat: int, steady: bool = False) -> dict[str, dict[str, float]]:
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in programs}
    if steady:
        spec = {"kind": "reply", "blocks": [{"text": big_markdown(STEADY_CHARS, seed=11)}], **STEADY_PACE}
        runner: Callable[[Launcher, str, Path], dict[str, float]] = steady_run
    else:
        spec = {"kind": "reply", "blocks": [{"text": big_markdown()}], "chunk": 16}
        runner = one_run
    with tempfile.TemporaryDirectory(prefix="agent-tui-bench-") as tmp:
        work = Path(tmp)
        with loopback([spec], work) as url:
            for launch in programs.values():
                warm_up(launch, url, work)
            for n in range(repeat):
                for name, launch in programs.items():
                    # What the previous run left (its exit, the memory it freed) settles first.
                    time.sleep(SETTLE)
                    run = floor_run if launch is launch_floor else runner
                    figures = run(launch, url, work)
                    runs[name].append(figures)
                    print(f"  run {n + 1} {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in figures.items()),
                          flush=True)
    return {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}


async def long_session(cwd: Path, turns: int = 300) -> tuple[float, float]:
    from agent_tui.tools.registry import default_tools

    answer = "A short answer with a list:\n\n- one\n- two\n\nand some `code`.\n"
    specs = [
        {"kind": "reply", "blocks": [{"tool_use": {"name": "Glob", "input": {"pattern": "*.nothing"}}}]},
        {"kind": "reply", "blocks": [{"text": answer}]},
    ]
    with loopback(specs, cwd) as url:
        app = _app(url, cwd)
        app.session.tools = default_tools()
        async with app.run_test(size=(120, 40)) as pilot:
            for n in range(turns):
                app.submit_prompt(f"turn {n}")
                while app.gauge.finished_at is None or app.session.running or app.conversation.queued:
                    await asyncio.sleep(0.005)
                app.gauge.finished_at = None
            await pilot.pause()
            latencies = []
            for key in "latency":
                t0 = time.perf_counter()
                await pilot.press(key)
                await pilot.pause()
                latencies.append(time.perf_counter() - t0)
            return _rss_mb(), statistics.median(latencies)


RESUME_TURNS = 500
HISTORY_POINTS = (10, 150, 500)
LIVE_TURNS = 5
# Typed at the first frame of a resume: a character nothing else on screen has.
KEY_CHAR = "ж"
_DONE = re.compile(rb"TURN-DONE-(\d+)")


def prepare_sessions(work: Path, turns: int) -> None:
    """A stored session of `turns` turns in `work` for each program (the newest, so `-c` takes it)."""
    from tests.bench.peer import SCRATCH
    from tests.bench.sessions import write_claude_session, write_session

    data = SCRATCH / "data"
    os.environ["AGENT_TUI_DATA_DIR"] = str(data)  # as agent_env gives agent-tui
    write_session(work.resolve(), str(uuid.uuid4()), turns)
    write_claude_session(SCRATCH / "claude-config", work, str(uuid.uuid4()), turns)


def resume_run(launch: Launcher, url: str, work: Path) -> dict[str, float]:
    """`-c`: spawn to the last screen of the stored session, and a key typed at the first frame to its echo."""
    with launch(url, work, "-c") as app:
        app.first_paint()
        since = len(app.output)
        typed = time.monotonic()
        app.type(KEY_CHAR)
        # Each taken when it first shows, whichever comes first (the echo often comes before the last screen).
        seen: dict[str, float] = {}
        markers = {"last": (f"LAST-PROMPT {RESUME_TURNS - 1}".encode(), 0), "key": (KEY_CHAR.encode(), since)}

        def note() -> bool:
            for name, (marker, start) in markers.items():
                if name not in seen and app.output.find(marker, max(start - len(marker), 0)) >= 0:
                    seen[name] = time.monotonic()
                    if name == "last":
                        seen["cpu"] = app.cpu()
            return len(seen) == 3

        app.wait_for(note, "the last screen and the typed key", timeout=300.0)
        return {"resume_screen": seen["last"] - app.started, "resume_cpu": seen["cpu"],
                "resume_key": seen["key"] - typed}


def turns_run(launch: Launcher, url: str, work: Path, history: int) -> dict[str, float]:
    """`-c` of a `history`-turn session, then `LIVE_TURNS` prompts: median CPU and wall per prompt."""
    with launch(url, work, "-c") as app:
        app.first_paint()
        app.wait_text(f"LAST-PROMPT {history - 1}".encode(), 0)
        app.settle(1.0)
        seen = {m.group(1) for m in _DONE.finditer(app.output)}
        cpus, walls = [], []
        for k in range(LIVE_TURNS):
            app.submit(f"go on {k}")
            since = len(app.output)
            cpu0, t0 = app.cpu_mark(), time.monotonic()

            def answered(start: int = max(since - 20, 0)) -> bool:
                found = {m.group(1) for m in _DONE.finditer(app.output, start)} - seen
                seen.update(found)
                return bool(found)

            t1 = app.wait_for(answered, "the answer's last line")
            app.settle(0.3, 0.3)
            cpus.append(app.cpu_since(cpu0))
            walls.append(t1 - t0)
        print(f"    {history} turns: CPU per prompt " + " ".join(f"{c:.3f}" for c in cpus) + ", to the last line "
              + " ".join(f"{w:.2f}" for w in walls), flush=True)
        return {f"turn_cpu_{history}": statistics.median(cpus), f"turn_wall_{history}": statistics.median(walls)}


def scale_side_by_side(programs: dict[str, Launcher], repeat: int, what: str) -> dict[str, dict[str, float]]:
    """`what`: "resume" or "turns", each program in turn, run by run; medians."""
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in programs}
    # Each answer ends with its own number: a redraw of an earlier one is not taken for it.
    specs = [{"kind": "reply", "blocks": [{"text": f"A short answer:\n\n- one\n- two\n\nTURN-DONE-{n}\n"}]}
             for n in range(50)]
    points = (RESUME_TURNS,) if what == "resume" else HISTORY_POINTS
    with tempfile.TemporaryDirectory(prefix="agent-tui-bench-") as tmp, loopback(specs, Path(tmp)) as url:
        works = {}
        for turns in points:
            works[turns] = Path(tmp) / f"w{turns}"
            works[turns].mkdir()
            prepare_sessions(works[turns], turns)
        for launch in programs.values():
            warm_up(launch, url, works[points[0]])
        for n in range(repeat):
            for name, launch in programs.items():
                figures: dict[str, float] = {}
                for turns in points:
                    if n or name != next(iter(programs)):
                        # A fresh session for each run: `-c` of the one the last run went on with
                        # would open on that run's prompts, not on the stored session's last screen.
                        prepare_sessions(works[turns], turns)
                    time.sleep(SETTLE)
                    if what == "resume":
                        figures.update(resume_run(launch, url, works[turns]))
                    else:
                        figures.update(turns_run(launch, url, works[turns], turns))
                runs[name].append(figures)
                print(f"  run {n + 1} {name}: " + ", ".join(f"{k} {v:.3f}" for k, v in figures.items()), flush=True)
    return {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}


# The tool run of `--only keys`: Read calls of small files in the project, a few per answer.
TOOL_CALLS = 300
TOOLS_PER_REPLY = 5
KEYS_DONE = "KEYS-DONE"
# Keys typed while the tools run: each a character used once (nothing else on screen has
# it, and an earlier key's echo redrawn is not taken for it), at about this interval.
KEY_CHARS = [chr(0x4E00 + n) for n in range(3000)]
KEY_INTERVAL = 0.1


def tool_burst(body: dict, index: int):
    """The loopback server's answer in `--only keys` (it runs in the server's process): Read calls
    of `f000.py`..., `TOOLS_PER_REPLY` an answer, until `TOOL_CALLS` results are in the request,
    then a text ending in `KEYS_DONE`.  A request without tools (a side request, such as a
    title) gets a short text and is no part of the run."""
    from tests.loopback import reply, text, tool_use

    if not body.get("tools"):
        return reply(text("Reading files"))
    done = sum(1 for m in body.get("messages", []) if m.get("role") == "user" and isinstance(m.get("content"), list)
               for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")
    if done >= TOOL_CALLS:
        return reply(text(f"All {done} files read.\n\n{KEYS_DONE}\n"))
    folder = Path(os.environ["BENCH_FOLDER"])
    calls = range(done, min(done + TOOLS_PER_REPLY, TOOL_CALLS))
    return reply(*(tool_use("Read", {"file_path": str(folder / f"f{n:03d}.py")}) for n in calls))


def keys_run(launch: Launcher, url: str, work: Path) -> dict[str, float]:
    """A prompt answered by `TOOL_CALLS` Read calls; a key typed every `KEY_INTERVAL` (with
    jitter) until the final text is on screen, each timed from its write to the pty to the
    first output that draws it.  Latencies in `keys` (all of them), wall and CPU of the run."""
    rnd = random.Random(5)
    with launch(url, work) as app:
        app.first_paint()
        app.settle(0.5)
        app.submit("read the files")
        since = len(app.output)
        cpu0, t0 = app.cpu(), time.monotonic()
        done = KEYS_DONE.encode()
        app.settle(0.3, 0.3)
        latencies: list[float] = []
        for ch in KEY_CHARS:
            if app.output.find(done, since) >= 0:
                break
            key, mark = ch.encode(), len(app.output)
            typed = time.monotonic()
            app.type(ch)
            echoed = app.wait_for(lambda key=key, mark=mark: app.output.find(key, mark) >= 0, f"the echo of {ch!r}",
                                  timeout=30.0)
            latencies.append(echoed - typed)
            pause_until = time.monotonic() + KEY_INTERVAL * rnd.uniform(0.5, 1.5)
            while (left := pause_until - time.monotonic()) > 0:
                app._read(left)
        end = app.wait_text(done, since)
        return {"keys": latencies, "tool_run": end - t0, "tool_run_cpu": app.cpu() - cpu0}  # type: ignore[dict-item]


# The words of `--only fuzzy` and the file each names (in `trees.fifty_thousand_files`).
FUZZY_WORDS = (("discount", "pkg/pricing/orders/discount_rules.py"),
               ("users_auth_12", "pkg/users/auth/mod_users_auth_12.py"),
               ("discrules", "pkg/pricing/orders/discount_rules.py"),
               ("mod_billing_docs_7", "pkg/billing/docs/mod_billing_docs_7.py"),
               ("core_api_300", "pkg/core/api/mod_core_api_300.py"))
FUZZY_FIRST = ("mod_views_auth_3", "pkg/views/auth/mod_views_auth_3.py")


def fuzzy_run(launch: Launcher, url: str, work: Path) -> dict[str, float]:
    """`@word` for each of `FUZZY_WORDS`: from its write to the first output showing its file (read
    afterwards from the output as it was timed: see `PtyApp.shown_at`)."""
    with launch(url, work) as app:
        app.first_paint()
        app.settle(1.0)
        def erase(word: str) -> None:
            app.type("\x7f" * (len(word) + 1))  # Backspace: the two programs' Ctrl+U differ
            app.settle(0.3, 3.0)

        # The first search waits for the file list: not timed.
        word, path = FUZZY_FIRST
        app.type(f"@{word}")
        app.wait_for(lambda: any(path in row for row in app.rows()), f"{path} after @{word}", timeout=30.0)
        erase(word)
        lags = []
        for word, path in FUZZY_WORDS:
            app.shown_at(lambda rows: False)  # the emulator catches up with what came before
            typed = time.monotonic()
            app.type(f"@{word}")
            app.settle(0.3, 5.0)  # until the screen has been quiet for a while
            found = app.shown_at(lambda rows, path=path: any(path in row for row in rows))
            if found is None:
                raise SystemExit(f"bench: @{word} did not show {path}; the screen:\n" + "\n".join(app.rows()))
            lags.append(found - typed)
            erase(word)
        return {"fuzzy": lags}  # type: ignore[dict-item]


def fuzzy_side_by_side(programs: dict[str, Launcher], repeat: int) -> dict[str, dict[str, float]]:
    """`--only fuzzy`: each program in turn, run by run, in one 50,000-file project."""
    from tests.bench.trees import fifty_thousand_files

    lags: dict[str, list[float]] = {name: [] for name in programs}
    with tempfile.TemporaryDirectory(prefix="agent-tui-bench-") as tmp:
        work = Path(tmp) / "project"
        fifty_thousand_files(work)
        with loopback([], Path(tmp), handler="tests.bench.bench_tui:tool_burst") as url:
            for launch in programs.values():
                warm_up(launch, url, work)
            for n in range(repeat):
                for name, launch in programs.items():
                    time.sleep(SETTLE)
                    found: list[float] = fuzzy_run(launch, url, work)["fuzzy"]  # type: ignore[assignment]
                    lags[name] += found
                    print(f"  run {n + 1} {name}: " + " ".join(f"{w}={t * 1000:.0f}" for (w, _), t in
                                                              zip(FUZZY_WORDS, found, strict=True)) + " ms", flush=True)
    return {name: {"fuzzy_median": statistics.median(found), "fuzzy_max": max(found)}
            for name, found in lags.items()}


def fuzzy_report(figures: dict[str, dict[str, float]]) -> str:
    ours, theirs = figures["agent-tui"], figures.get("claude", {})
    rows = [("measure", "agent-tui", "Claude Code", "ratio", "target")]
    for key, name in (("fuzzy_median", "@word to its file on screen, median"),
                      ("fuzzy_max", "@word to its file on screen, max")):
        value, other = ours[key], theirs.get(key)
        target = f"<= 100 ms {'meets' if value <= 0.1 else 'MISSES'}" if key == "fuzzy_median" else ""
        rows.append((name, f"{value * 1000:.0f} ms", f"{other * 1000:.0f} ms" if other else "-", _ratio(value, other),
                     target))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def keys_side_by_side(programs: dict[str, Launcher], repeat: int) -> dict[str, dict[str, float]]:
    """`--only keys`: each program in turn, run by run; every key of every run pooled."""
    keys: dict[str, list[float]] = {name: [] for name in programs}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in programs}
    with tempfile.TemporaryDirectory(prefix="agent-tui-bench-") as tmp:
        work = Path(tmp)
        for n in range(TOOL_CALLS):
            (work / f"f{n:03d}.py").write_text("".join(f"def f{n}_{j}(x):\n    return x + {j}\n" for j in range(5)))
        with loopback([], work, handler="tests.bench.bench_tui:tool_burst") as url:
            for launch in programs.values():
                warm_up(launch, url, work)
            for n in range(repeat):
                for name, launch in programs.items():
                    time.sleep(SETTLE)
                    figures = keys_run(launch, url, work)
                    typed: list[float] = figures.pop("keys")  # type: ignore[assignment]
                    keys[name] += typed
                    runs[name].append(figures)
                    print(f"  run {n + 1} {name}: {len(typed)} keys, median {statistics.median(typed) * 1000:.0f} ms, "
                          f"p99 {_percentile(typed, 0.99) * 1000:.0f} ms, max {max(typed) * 1000:.0f} ms; tool run "
                          f"{figures['tool_run']:.2f} s, CPU {figures['tool_run_cpu']:.2f} s", flush=True)
    out = {}
    for name, typed in keys.items():
        out[name] = {"key_median": statistics.median(typed), "key_p99": _percentile(typed, 0.99), "key_max": max(typed),
                     "keys": float(len(typed)),
                     **{k: statistics.median(r[k] for r in runs[name]) for k in runs[name][0]}}
    return out


def keys_report(figures: dict[str, dict[str, float]]) -> str:
    ours, theirs = figures["agent-tui"], figures.get("claude", {})
    rows = [("measure", "agent-tui", "Claude Code", "ratio", "target")]
    for key, name, target in (("key_median", "key to screen, median", ""),
                              ("key_p99", "key to screen, 99th pct", "<= 50 ms"),
                              ("key_max", "key to screen, max", ""),
                              ("keys", "keys typed (all runs)", ""),
                              ("tool_run", f"Enter to the end of {TOOL_CALLS} tools (s)", ""),
                              ("tool_run_cpu", "CPU of the run (s)", "")):
        value, other = ours[key], theirs.get(key)
        fmt = (lambda v: f"{v * 1000:.0f} ms") if key.startswith("key_") else (lambda v: f"{v:.2f}")
        verdict = ("meets" if value <= 0.05 else "MISSES") if key == "key_p99" else ""
        rows.append((name, fmt(value), fmt(other) if other else "-", _ratio(value, other),
                     f"{target} {verdict}".strip()))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows)


def scale_report(figures: dict[str, dict[str, float]]) -> str:
    ours, theirs = figures["agent-tui"], figures.get("claude", {})
    rows = [("measure", "agent-tui", "Claude Code", "ratio")]
    for key, value in ours.items():
        other = theirs.get(key)
        rows.append((key, f"{value:.3f}", f"{other:.3f}" if other else "-", _ratio(value, other)))
    for prefix in ("turn_cpu", "turn_wall"):
        first, last = ours.get(f"{prefix}_{HISTORY_POINTS[0]}"), ours.get(f"{prefix}_{HISTORY_POINTS[-1]}")
        if first and last:
            rows.append((f"{prefix} {HISTORY_POINTS[-1]} / {HISTORY_POINTS[0]} (agent-tui)", f"{last / first:.2f}x",
                         "", ""))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows)


def _screen(app) -> str:
    import io

    from rich.console import Console

    console = Console(width=app.size.width, file=io.StringIO(), record=True, force_terminal=True)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text()


def _ratio(ours: float, theirs: float | None) -> str:
    return f"{ours / theirs:.2f}x" if theirs else "-"


def _verdict(value: float, ratio: float | None, limits: tuple[float | None, float | None]) -> str:
    absolute, relative = limits
    checks = []
    if absolute is not None:
        checks.append(value <= absolute)
    if relative is not None and ratio is not None:
        checks.append(ratio <= relative)
    if not checks:
        return "-"
    return "meets" if all(checks) else "MISSES"


BURST_ROWS = (
        ("paint", "first paint", "s", "first paint", "<= 0.6 s and <= 1.0x"),
        ("paint_cpu", "first paint: CPU", "s", None, "-"),
        ("idle_rss", "idle RSS", "MB", "rss", "<= 100 MB"),
        ("last_line", "330 KB answer: Enter to last line", "s", "last line", "<= 1.0x"),
        ("cpu", "330 KB answer: CPU", "s", "cpu", "<= 0.8x"),
        ("peak_rss", "330 KB answer: peak RSS", "MB", None, "-"),
        ("pause", "330 KB answer: longest pause in output", "s", None, "-"),
        ("pause_cpu", "330 KB answer: most CPU between outputs", "s", "frame", "<= 0.05 s (20 fps)"),
        ("p95_cpu", "330 KB answer: CPU between outputs, 95th pct", "s", "frame", "<= 0.05 s (20 fps)"),
        ("fps", "330 KB answer: screen updates per second", "/s", None, ">= 20"),
)
STEADY_ROWS = (
    ("steady_core", "6 KB at 600 chars/s: share of a core", "", None, "-"),
    ("steady_fps", "6 KB at 600 chars/s: screen updates per second", "/s", None, ">= 20"),
    ("steady_gap", "6 KB at 600 chars/s: most CPU between outputs", "s", None, "-"),
)


def report(figures: dict[str, dict[str, float]], rows_wanted=BURST_ROWS) -> str:
    ours = figures["agent-tui"]
    theirs = figures.get("claude")
    rows = [("measure", "agent-tui", "Claude Code", "ratio", "target", "verdict")]
    for key, name, unit, target_key, target in rows_wanted:
        value = ours[key]
        other = theirs[key] if theirs else None
        ratio = value / other if other else None
        fmt = "{:.0f} " if unit in ("MB", "/s") else "{:.2f} "
        verdict = _verdict(value, ratio, TARGETS[target_key]) if target_key else "-"
        if key in ("fps", "steady_fps"):
            verdict = "meets" if value >= 20 else "MISSES"
        rows.append((name, fmt.format(value) + unit, fmt.format(other) + unit if other else "-",
                     _ratio(value, other), target, verdict))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_tui", description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per program (median reported)")
    parser.add_argument("--only", choices=("pty", "steady", "session", "resume", "turns", "keys", "fuzzy"), action="append",
                        help="run only these parts")
    args = parser.parse_args(argv)
    only = set(args.only or ("pty", "steady", "session", "resume", "turns", "keys", "fuzzy"))
    claude = find_claude()
    print(f"agent-tui: {find_agent()}, {compile_agent(find_agent())}", flush=True)
    print(f"Claude Code: {f'{claude} ({claude_version(claude)})' if claude else 'not found (set CLAUDE_CODE_BIN)'}",
          flush=True)
    programs: dict[str, Launcher] = {"agent-tui": launch_agent}
    if claude:
        programs["claude"] = launcher_for_claude(claude)
    if "pty" in only:
        figures = side_by_side({**programs, "floor": launch_floor}, args.repeat)
        print(f"\nmedians of {args.repeat} runs each, in a 120x40 pty, one loopback server\n")
        print(report(figures))
        floor, ours = figures["floor"], figures["agent-tui"]
        print(f"\nfloor: a minimal Textual app (header, text, input, footer; tests/bench/floor_app.py) on the same "
              f"Python and Textual: first paint {floor['paint']:.2f} s (CPU {floor['paint_cpu']:.2f} s), idle RSS "
              f"{floor['idle_rss']:.0f} MB; agent-tui adds {ours['paint'] - floor['paint']:.2f} s "
              f"(CPU {ours['paint_cpu'] - floor['paint_cpu']:.2f} s)")
    if "steady" in only:
        figures = side_by_side(programs, args.repeat, steady=True)
        print(f"\na {STEADY_CHARS // 1000} KB answer, {STEADY_PACE['chunk']} characters every "
              f"{STEADY_PACE['delay'] * 1000:.0f} ms; medians of {args.repeat} runs each\n")
        print(report(figures, STEADY_ROWS))
    for what in ("resume", "turns"):
        if what in only:
            figures = scale_side_by_side(programs, args.repeat, what)
            print(f"\n{what}: medians of {args.repeat} runs each, in a 120x40 pty, one loopback server\n")
            print(scale_report(figures))
    if "keys" in only:
        figures = keys_side_by_side(programs, args.repeat)
        print(f"\nkeys typed during a run of {TOOL_CALLS} Read calls ({TOOLS_PER_REPLY} an answer), one every "
              f"~{KEY_INTERVAL * 1000:.0f} ms; all keys of {args.repeat} runs each, run times medians\n")
        print(keys_report(figures))
    if "fuzzy" in only:
        figures = fuzzy_side_by_side(programs, args.repeat)
        print(f"\n@ completion in a 50,000-file project: {len(FUZZY_WORDS)} words a run, all words of {args.repeat} "
              f"runs each\n")
        print(fuzzy_report(figures))
    if "session" in only:
        with tempfile.TemporaryDirectory() as tmp:
            session_rss, latency = asyncio.run(long_session(Path(tmp)))
        print(f"\n300 turns (agent-tui, in-process): peak RSS {session_rss:.0f} MB, "
              f"key press to paint {latency * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
