"""Print-mode per-turn overhead, the OpenAI-compatible path against the Messages API path.

    python -m tests.bench.bench_openai [--repeat N]

The installed `agent-tui -p` runs the same session twice per repeat, once against the
loopback Messages API and once against the loopback chat-completions server (chosen by
`AGENT_TUI_PROVIDER=openai`, `OPENAI_BASE_URL`, `OPENAI_API_KEY`): 11 model turns (ten
answers with one `Read` each, then a final text) and a 1-turn run as the start-up baseline.
Per-turn overhead in wall time is the median gap between one request's arrival at the server
and the next one's (the answer streamed, the Read run, the next request built and sent: the
server answers at once), which start-up noise does not touch; in CPU it is (11-turn run -
1-turn run) / 10 of the child's own seconds (`os.wait4`).  The two paths run in turn, repeat
by repeat, so load from elsewhere hits both alike; the table prints medians and the ratio
chat completions / Messages API (target: at most 1.1).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from tests.bench.bench_print import Program, Run, reset, run_program
from tests.bench.peer import agent_env, compile_agent, find_agent
from tests.loopback import LoopbackServer, reply, text, tool_use
from tests.openai_loopback import OpenAILoopback, call, chat

READ_TURNS = 10
RATIO_TARGET = 1.1


def messages_script(path: Path) -> list:
    turns = [reply(text(f"Reading, step {i}."), tool_use("Read", {"file_path": str(path)}, id=f"toolu_{i}"))
             for i in range(READ_TURNS)]
    return [*turns, reply("All ten reads done.")]


def openai_script(path: Path) -> list:
    turns = [chat(f"Reading, step {i}.", call("Read", {"file_path": str(path)}, id=f"call_{i}"))
             for i in range(READ_TURNS)]
    return [*turns, chat("All ten reads done.")]


def timed(srv: LoopbackServer, prog: Program, work: Path, script: list, what: str) -> tuple[Run, float]:
    """The run, and the median gap between its requests' arrivals (0 for one request)."""
    reset(srv)
    srv.push(*script)
    run = run_program(prog, ["-p", "read notes.txt ten times"], work, keep_stdout=True)
    if run.code != 0 or srv.errors or srv.pending or len(srv.requests) != len(script):
        tail = run.stderr.decode(errors="replace")[-2000:]
        raise SystemExit(f"bench: {what} failed (exit {run.code}, {len(srv.requests)} requests, "
                         f"errors {srv.errors})\nstderr:\n{tail}")
    arrivals = [r.time for r in srv.requests]
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    return run, statistics.median(gaps) if gaps else 0.0


def cpu_per_turn(runs: list[Run], base: list[Run]) -> float:
    return (statistics.median(r.cpu for r in runs) - statistics.median(r.cpu for r in base)) / READ_TURNS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_openai", description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    exe = find_agent()
    print(f"agent-tui: {compile_agent(exe)}")
    with tempfile.TemporaryDirectory(prefix="agent-tui-bench-openai-") as tmp, \
            LoopbackServer() as messages, OpenAILoopback() as openai:
        work = Path(tmp)
        notes = work / "notes.txt"
        notes.write_text("alpha\nbeta\n" * 20)
        paths = {
            "Messages API": (messages, Program("messages", [exe], agent_env(messages.url)), messages_script,
                             lambda: [reply("hi")]),
            "chat completions": (openai, Program("openai", [exe], {
                **agent_env(openai.url), "AGENT_TUI_PROVIDER": "openai",
                "OPENAI_BASE_URL": openai.url + "/v1", "OPENAI_API_KEY": "test"}), openai_script,
                lambda: [chat("hi")]),
        }
        results: dict[str, tuple[list[Run], list[Run], list[float]]] = {name: ([], [], []) for name in paths}
        for _ in range(args.repeat):
            for name, (srv, prog, script, single) in paths.items():
                run, gap = timed(srv, prog, work, script(notes), f"{name} 11 turns")
                results[name][0].append(run)
                results[name][2].append(gap)
                results[name][1].append(timed(srv, prog, work, single(), f"{name} 1 turn")[0])
    rows = {name: (statistics.median(gaps), cpu_per_turn(full, base), statistics.median(r.wall for r in base))
            for name, (full, base, gaps) in results.items()}
    print(f"\nper-turn overhead, median of {args.repeat} runs of {READ_TURNS + 1} turns"
          " (wall: request to request; cpu: 11-turn run minus 1-turn run)")
    print(f"{'path':<18} {'wall ms/turn':>13} {'cpu ms/turn':>12} {'1-turn wall ms':>15}")
    for name, (wall, cpu, start) in rows.items():
        print(f"{name:<18} {wall * 1000:>13.1f} {cpu * 1000:>12.1f} {start * 1000:>15.0f}")
    (m_wall, m_cpu, _), (o_wall, o_cpu, _) = rows["Messages API"], rows["chat completions"]
    wall_ratio = o_wall / m_wall if m_wall > 0 else float("nan")
    cpu_ratio = o_cpu / m_cpu if m_cpu > 0 else float("nan")
    verdict = "ok" if wall_ratio <= RATIO_TARGET else "over"
    print(f"ratio chat completions / Messages API: wall {wall_ratio:.2f}x, cpu {cpu_ratio:.2f}x "
          f"(target <= {RATIO_TARGET}x wall: {verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
