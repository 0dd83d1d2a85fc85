"""Print-mode per-turn overhead, the OpenAI-compatible path against the Messages API path.

    python -m tests.bench.bench_openai [--repeat N]

The installed `agent-tui -p` runs the same session twice per repeat, once against the
loopback Messages API and once against the loopback chat-completions server (chosen by
`AGENT_TUI_PROVIDER=openai`, `OPENAI_BASE_URL`, `OPENAI_API_KEY`): 11 model turns (ten
answers with one `Read` each, then a final text) and a 1-turn run as the start-up baseline.
Per-turn overhead in wall time is the median gap between one request's arrival at the server
and the next one's (the answer streamed, the Read run, the next request built and sent: the
server answers at once); in CPU it is the median of the CPU the child spent between the same
two arrivals (its threads' run time in /proc/PID/task/*/schedstat, read by the server as each
request arrives, to the nanosecond).  Neither counts start-up, whose noise (tens of
milliseconds) is larger than ten turns' work.  The two paths run in turn, repeat by repeat,
so load from elsewhere hits both alike; the table prints each repeat's ratio chat completions
/ Messages API, and their median and range (target: at most 1.1 for wall and CPU).  The
start-up difference ((11-turn run - 1-turn run) / 10 of `os.wait4`'s CPU) is printed too.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.bench.bench_print import Program, Run, reset, run_program
from tests.bench.peer import agent_env, compile_agent, find_agent, live_cpu
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


@dataclass
class Timed:
    run: Run
    gap: float  # median request-to-request wall seconds (0 for one request)
    cpu: float  # median CPU seconds of the child between two requests (0 for one request)


def timed(srv: LoopbackServer, prog: Program, work: Path, script: list, what: str) -> Timed:
    """The run, and the medians of the wall and CPU between its requests' arrivals."""
    reset(srv)
    srv.push(*script)
    pid: list[int] = []
    cpus: list[float] = []
    srv.on_request = lambda _received: cpus.append(live_cpu(pid[0]))
    try:
        run = run_program(prog, ["-p", "read notes.txt ten times"], work, keep_stdout=True, on_start=pid.append)
    finally:
        srv.on_request = None
    if run.code != 0 or srv.errors or srv.pending or len(srv.requests) != len(script):
        tail = run.stderr.decode(errors="replace")[-2000:]
        raise SystemExit(f"bench: {what} failed (exit {run.code}, {len(srv.requests)} requests, "
                         f"errors {srv.errors})\nstderr:\n{tail}")
    arrivals = [r.time for r in srv.requests]
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    spent = [b - a for a, b in zip(cpus, cpus[1:], strict=False)]
    return Timed(run, statistics.median(gaps) if gaps else 0.0, statistics.median(spent) if spent else 0.0)


def cpu_per_turn(runs: list[Run], base: list[Run]) -> float:
    return (statistics.median(r.cpu for r in runs) - statistics.median(r.cpu for r in base)) / READ_TURNS


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"


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
        full: dict[str, list[Timed]] = {name: [] for name in paths}
        base: dict[str, list[Run]] = {name: [] for name in paths}
        for _ in range(args.repeat):
            for name, (srv, prog, script, single) in paths.items():
                full[name].append(timed(srv, prog, work, script(notes), f"{name} 11 turns"))
                base[name].append(timed(srv, prog, work, single(), f"{name} 1 turn").run)
    print(f"\nper-turn overhead of {READ_TURNS + 1}-turn runs, median of {args.repeat} repeats"
          " (wall: request to request; cpu: the child's CPU between the same requests)")
    print(f"{'path':<18} {'wall ms/turn':>13} {'cpu ms/turn':>12} {'cpu incl. start-up diff':>24} {'1-turn wall ms':>15}")
    for name in paths:
        runs = [t.run for t in full[name]]
        print(f"{name:<18} {statistics.median(t.gap for t in full[name]) * 1000:>13.2f}"
              f" {statistics.median(t.cpu for t in full[name]) * 1000:>12.2f}"
              f" {cpu_per_turn(runs, base[name]) * 1000:>24.2f}"
              f" {statistics.median(r.wall for r in base[name]) * 1000:>15.0f}")
    pairs = list(zip(full["chat completions"], full["Messages API"], strict=True))
    wall = [o.gap / m.gap for o, m in pairs]
    cpu = [o.cpu / m.cpu for o, m in pairs]
    print("\nratio chat completions / Messages API, repeat by repeat:")
    print("  wall: " + "  ".join(f"{r:.2f}" for r in wall))
    print("  cpu:  " + "  ".join(f"{r:.2f}" for r in cpu))
    ok = statistics.median(wall) <= RATIO_TARGET and statistics.median(cpu) <= RATIO_TARGET
    print(f"median (range): wall {spread(wall)}, cpu {spread(cpu)}  "
          f"(target <= {RATIO_TARGET}x both: {'met' if ok else 'missed'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
