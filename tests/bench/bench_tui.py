"""TUI benchmark (not a timed test): `python -m tests.bench.bench_tui`.

Prints, against the loopback Messages-API server (in its own process, so its
bookkeeping does not count against the app's memory):
- time to first paint (process start to the first frame, headless);
- a 330 KB Markdown answer streamed as fast as the server sends it: time until
  its last line is on screen, CPU seconds and peak RSS of the process;
- a 300-turn session: RSS, and key-press-to-paint latency at the end of it.
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import asyncio  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

TARGETS = {"first paint": "≤ 0.5 s", "last line": "≤ 1.5 s", "cpu": "≤ 2 CPU s", "rss": "≤ 150 MB"}
WORDS = "the agent reads files streams tokens renders markdown while tools run in parallel and the timeline shows each call".split()


def big_markdown(target: int = 330_000, seed: int = 7) -> str:
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
    parts.append("THE-LAST-LINE of the answer.\n")
    return "".join(parts)


def _app(url: str, cwd: Path):
    from agent_tui.engine.model import AnthropicModel
    from agent_tui.engine.session import Session
    from agent_tui.tui.app import AgentApp

    session = Session(model=AnthropicModel("claude-sonnet-4-6", base_url=url, api_key="bench"), tools=[], cwd=cwd)
    return AgentApp(session)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def first_paint() -> float:
    """In a fresh process: imports, app start, first frame."""
    code = (
        "import time; t=time.perf_counter()\n"
        "from pathlib import Path\n"
        "from agent_tui.engine.demo import DemoModel\n"
        "from agent_tui.engine.session import Session\n"
        "from agent_tui.tui.app import AgentApp\n"
        "app = AgentApp(Session(model=DemoModel(speed=0), tools=[], cwd=Path('.')))\n"
        "async def auto(pilot):\n"
        "    await pilot.pause(); print(time.perf_counter() - t); app.exit(0)\n"
        "app.run(headless=True, size=(120, 36), auto_pilot=auto)\n"
    )
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout) for _ in range(3)]
    return statistics.median(runs)


@contextlib.contextmanager
def loopback(specs: list[dict], folder: Path) -> Iterator[str]:
    """`python -m tests.loopback` serving `specs` in a cycle; its URL."""
    script = folder / "script.json"
    script.write_text(json.dumps(specs))
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.loopback", "--port", "0", "--cycle", "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait(timeout=10)


async def big_answer(cwd: Path) -> tuple[float, float, float]:
    with loopback([{"kind": "reply", "blocks": [{"text": big_markdown()}], "chunk": 16}], cwd) as url:
        app = _app(url, cwd)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            cpu0, t0 = time.process_time(), time.monotonic()
            app.submit_prompt("write a very long answer")
            while app.gauge.finished_at is None:
                await asyncio.sleep(0.005)
            await pilot.pause()
            while "THE-LAST-LINE" not in _screen(app):
                await pilot.pause(0.01)
            return time.monotonic() - t0, time.process_time() - cpu0, _rss_mb()


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
                while app.gauge.finished_at is None or app.session.running or app._queued:
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


def _screen(app) -> str:
    import io

    from rich.console import Console

    console = Console(width=app.size.width, file=io.StringIO(), record=True, force_terminal=True)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text()


def main() -> int:
    paint = first_paint()
    with tempfile.TemporaryDirectory() as tmp:
        last_line, cpu, rss = asyncio.run(big_answer(Path(tmp)))
    with tempfile.TemporaryDirectory() as tmp:
        session_rss, latency = asyncio.run(long_session(Path(tmp)))
    rows = [
        ("first paint", f"{paint:.2f} s", TARGETS["first paint"]),
        ("330 KB answer: last line on screen", f"{last_line:.2f} s", TARGETS["last line"]),
        ("330 KB answer: CPU", f"{cpu:.2f} s", TARGETS["cpu"]),
        ("330 KB answer: peak RSS", f"{rss:.0f} MB", TARGETS["rss"]),
        ("300 turns: peak RSS", f"{session_rss:.0f} MB", ""),
        ("300 turns: key press to paint", f"{latency * 1000:.0f} ms", ""),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'result':>9}  target")
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:>9}  {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
