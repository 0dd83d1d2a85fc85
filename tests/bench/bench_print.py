"""Print-mode benchmark: the installed `agent-tui -p` against the loopback Messages API.

    python -m tests.bench.bench_print [--repeat N]

Every measurement runs the console script as a child process (its CPU seconds
and peak RSS come from `os.wait4`, so they are the child's own figures) against
an in-process loopback server, `--repeat` times (default 3), and reports the
median.  The machine may be noisy: compare figures from one run only.

Scenarios (issue 2, "Done when"):

1. per-turn overhead: 11 model turns (ten replies with one `Read` each, then a
   final text) against an instant server, and a trivial 1-turn run as the
   startup baseline.
2. stream ingest: one ~330 KB Markdown answer streamed in 8-character text
   deltas, `--output-format text` (output checked against the input) and
   `stream-json --verbose` (Claude Code's message stream, in both programs).
3. tool overlap: three 1 s read-only tools (`Bash sleep 1`) streamed over
   ~1.4 s; the tool phase ends when the follow-up request arrives.  Ideal:
   the last content_block_stop + 1 s.
4. 500 turns: 500 replies with one `Read` of a different 7 KB file each, then a
   final text: the history grows to about 4 MB.  Per-turn gap = from the last
   byte of an answer to the next request's first byte ("start": the program's
   own turn: taking the answer, running the Read, building the request) and
   to the request read whole ("read": the body's trip through the loopback and
   the server's reading of it added; the server's parsing is not in either),
   median of turns 5-15 ("turn 10") and of the last 11 ("turn 500").  Target:
   turn 500 at most 1.3x turn 10.

When Claude Code is found (`CLAUDE_CODE_BIN` or `claude` on PATH, see
`peer.py`), every scenario also runs it, interleaved run by run with agent-tui
against the same server, and the table prints the ratio agent-tui / Claude Code.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.bench.peer import agent_env, claude_env, claude_version, compile_agent, find_agent, find_claude
from tests.loopback import LoopbackServer, Response, reply, text, tool_use

# ---------------------------------------------------------------- targets

RSS_TARGET_MB = 100.0
OVERHEAD_RATIO = 0.5  # agent-tui's per-turn overhead at most half Claude Code's
OVERLAP_TARGET = 0.10  # tool phase end within 10% of the ideal
TOOL_SECONDS = 1.0
STREAM_BYTES = 330_000
READ_TURNS = 10
LONG_TURNS = 500
LONG_GROWTH = 1.3  # the gap at turn 500 at most 1.3x the gap at turn 10
# Every answer reports a small context, so neither program compacts: the history only grows.
LONG_USAGE = {"input_tokens": 2000, "output_tokens": 20}


# ---------------------------------------------------------------- running the child


@dataclass
class Program:
    """One of the programs compared: how to start it in print mode."""

    name: str
    argv: list[str]
    env: dict[str, str]
    # Flags it needs for some scenarios (Claude Code asks before running `sleep`).
    extra: dict[str, list[str]] = field(default_factory=dict)
    # Both programs print Claude Code's message stream with these flags.
    stream_json: list[str] = field(default_factory=lambda: ["--output-format", "stream-json", "--verbose"])


def programs(url: str, work: Path) -> list[Program]:
    found = [Program("agent-tui", [find_agent()], agent_env(url))]
    claude = find_claude()
    if claude:
        found.append(Program(
            "claude", [claude], claude_env(url, work),
            extra={"overlap": ["--allowedTools", "Bash(sleep:*)"]},
        ))
    return found


@dataclass
class Run:
    wall: float  # seconds, spawn to reaped
    cpu: float  # user + sys seconds of the child (and its reaped children)
    rss_mb: float  # peak RSS
    code: int
    stdout: bytes
    stderr: bytes


def run_program(prog: Program, args: list[str], cwd: Path, *, keep_stdout: bool = True,
                on_start: Callable[[int], None] | None = None) -> Run:
    """Run the program with ARGS; stdout goes to a file (or /dev/null), measured with wait4.
    `on_start` gets the child's pid as it starts."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sink = out if keep_stdout else subprocess.DEVNULL
        started = time.monotonic()
        proc = subprocess.Popen([*prog.argv, *args], cwd=cwd, env=prog.env, stdin=subprocess.DEVNULL,
                                stdout=sink, stderr=err)
        if on_start is not None:
            on_start(proc.pid)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        return Run(
            wall=wall,
            cpu=usage.ru_utime + usage.ru_stime,
            rss_mb=usage.ru_maxrss / 1024.0,  # KB on Linux
            code=proc.returncode,
            stdout=out.read(),
            stderr=err.read(),
        )


def checked(srv: LoopbackServer, run: Run, what: str, requests: int) -> Run:
    problems = []
    if run.code != 0:
        problems.append(f"exit status {run.code}")
    if srv.errors:
        problems.append(f"server errors: {srv.errors}")
    if srv.pending:
        problems.append(f"{srv.pending} scripted responses not consumed")
    if len(srv.requests) != requests:
        problems.append(f"{len(srv.requests)} requests, expected {requests}")
    if problems:
        tail = run.stderr.decode(errors="replace")[-2000:]
        raise SystemExit(f"bench: {what} failed: {'; '.join(problems)}\nstderr:\n{tail}")
    return run


def reset(srv: LoopbackServer) -> None:
    srv.requests.clear()
    srv.errors.clear()
    srv.disconnects.clear()
    srv.answered.clear()


# ---------------------------------------------------------------- scripted content


def markdown_answer(size: int = STREAM_BYTES, seed: int = 2) -> str:
    """Deterministic, realistic Markdown of about `size` UTF-8 bytes."""
    rng = random.Random(seed)
    words = (
        "the a loop stream event parser buffer request response token model tool result file "
        "function returns value when each call async await queue handler session state history "
        "message block delta index cache limit retry error because which should could into over "
        "from with without before after while every only first last next this that these those "
        "configuration dependency interface module package compile runtime memory latency overhead"
    ).split()
    idents = ["parse_event", "StreamAccumulator", "feed", "run_print", "EventBus", "publish",
              "tool_result", "max_tokens", "ModelRequest", "normalize_for_api"]

    def sentence() -> str:
        n = rng.randint(6, 18)
        ws = [rng.choice(words) for _ in range(n)]
        if rng.random() < 0.35:
            ws[rng.randrange(n)] = f"`{rng.choice(idents)}`"
        if rng.random() < 0.15:
            ws[rng.randrange(n)] = f"**{rng.choice(words)}**"
        if rng.random() < 0.05:
            ws[rng.randrange(n)] = "naïve — café"
        s = " ".join(ws)
        return s[0].upper() + s[1:] + rng.choice([".", ".", ".", "?", ":"])

    def paragraph() -> str:
        return " ".join(sentence() for _ in range(rng.randint(2, 6)))

    def code_block() -> str:
        name = rng.choice(idents).lower()
        lines = [f"def {name}(items, limit={rng.randint(1, 99)}):", '    """Collect what fits."""',
                 "    out = []"]
        for _ in range(rng.randint(2, 8)):
            lines.append(f"    if len(out) >= limit:  # {rng.choice(words)} {rng.choice(words)}")
            lines.append("        break")
            lines.append(f"    out.append(items[{rng.randint(0, 9)}] * {rng.randint(2, 9)})")
        lines.append("    return out")
        lang = rng.choice(["python", "python", "py"])
        return f"```{lang}\n" + "\n".join(lines) + "\n```"

    def bullet_list() -> str:
        ordered = rng.random() < 0.4
        items = []
        for i in range(rng.randint(3, 7)):
            mark = f"{i + 1}." if ordered else "-"
            item = f"{mark} {sentence()}"
            if rng.random() < 0.2:
                item += f"\n   - {sentence()}"
            items.append(item)
        return "\n".join(items)

    def table() -> str:
        rows = ["| name | calls | time (ms) |", "|---|---:|---:|"]
        for _ in range(rng.randint(3, 6)):
            rows.append(f"| `{rng.choice(idents)}` | {rng.randint(1, 9999)} | {rng.randint(1, 999)}.{rng.randint(0, 9)} |")
        return "\n".join(rows)

    parts: list[str] = []
    total = 0
    section = 0
    while total < size:
        section += 1
        chunk = [f"## {section}. {sentence().rstrip('.?:')}"]
        for _ in range(rng.randint(3, 7)):
            kind = rng.random()
            if kind < 0.45:
                chunk.append(paragraph())
            elif kind < 0.7:
                chunk.append(bullet_list())
            elif kind < 0.9:
                chunk.append(code_block())
            else:
                chunk.append(table())
            if rng.random() < 0.2:
                chunk.append(f"### {sentence().rstrip('.?:')}")
        piece = "\n\n".join(chunk) + "\n\n"
        parts.append(piece)
        total += len(piece.encode())
    md = "# Benchmark answer\n\n" + "".join(parts)
    return md.rstrip("\n") + "\n"


class TimedResponse(Response):
    """A scripted stream that records when its last HTTP chunk was written.

    The server writes `segments()` in order and asks for the next one only after
    the previous write drained, so the time of the final request for a segment
    is the time the last content_block_stop was sent."""

    sent_at: float | None = None

    @classmethod
    def of(cls, resp: Response) -> TimedResponse:
        return cls(**{f.name: getattr(resp, f.name) for f in dataclasses.fields(resp)})

    def segments(self) -> Any:
        base = super().segments()
        outer = self

        def iterate() -> Iterator[tuple[float, bytes]]:
            yield from base
            outer.sent_at = time.monotonic()

        class _Segments(list):  # type: ignore[type-arg]
            def __iter__(self) -> Iterator[tuple[float, bytes]]:
                return iterate()

        return _Segments(base)


# ---------------------------------------------------------------- scenarios


def medians(runs: list[Run]) -> dict[str, float]:
    return {
        "wall": statistics.median(r.wall for r in runs),
        "cpu": statistics.median(r.cpu for r in runs),
        "rss": statistics.median(r.rss_mb for r in runs),
    }


def interleaved(progs: list[Program], repeat: int, once: Callable[[Program], Any]) -> dict[str, list[Any]]:
    """`once(program)` for each program in turn, `repeat` rounds: load from elsewhere hits all alike."""
    out: dict[str, list[Any]] = {p.name: [] for p in progs}
    for _ in range(repeat):
        for prog in progs:
            out[prog.name].append(once(prog))
    return out


def bench_turns(srv: LoopbackServer, progs: list[Program], work: Path, repeat: int) -> dict[str, dict[str, Any]]:
    files = []
    for i in range(READ_TURNS):
        f = work / f"module_{i}.py"
        f.write_text("".join(f"value_{i}_{n} = {n * i}\n" for n in range(40)))
        files.append(f)
    gaps: dict[str, list[float]] = {p.name: [] for p in progs}

    def baseline(prog: Program) -> Run:
        reset(srv)
        srv.push(reply("Nothing to do."))
        return checked(srv, run_program(prog, ["-p", "say hi", "--output-format", "text"], work),
                       f"{prog.name}: 1-turn baseline", 1)

    def ten_reads(prog: Program) -> Run:
        reset(srv)
        srv.push(*(reply(text("Reading the next file."), tool_use("Read", {"file_path": str(f)}))
                   for f in files))
        srv.push(reply("All ten files read."))
        run = run_program(prog, ["-p", "read the ten modules", "--output-format", "text"], work)
        run = checked(srv, run, f"{prog.name}: 10 Read turns", READ_TURNS + 1)
        if run.stdout.decode().strip() != "All ten files read.":
            raise SystemExit(f"bench: {prog.name}: 10 Read turns: unexpected output {run.stdout[:200]!r}")
        last = srv.requests[-1].body["messages"]
        if "value_9_39" not in str(last[-2:]):
            raise SystemExit(f"bench: {prog.name}: 10 Read turns: the last Read result did not reach the model")
        times = [q.time for q in srv.requests]
        gaps[prog.name].append(statistics.median(b - a for a, b in zip(times, times[1:], strict=False)))
        return run

    def both(prog: Program) -> tuple[Run, Run]:
        return baseline(prog), ten_reads(prog)

    runs = interleaved(progs, repeat, both)
    return {name: {"base": medians([b for b, _ in pairs]), "reads": medians([r for _, r in pairs]),
                   "gap": statistics.median(gaps[name])} for name, pairs in runs.items()}


def bench_stream(srv: LoopbackServer, progs: list[Program], work: Path, repeat: int) -> dict[str, dict[str, Any]]:
    md = markdown_answer()
    resp = reply(text(md), chunk=8)
    expected = md.rstrip("\n")

    def as_text(prog: Program) -> Run:
        reset(srv)
        srv.push(resp)
        run = checked(srv, run_program(prog, ["-p", "write the long answer", "--output-format", "text"], work),
                      f"{prog.name}: 330 KB stream (text)", 1)
        if run.stdout.decode().rstrip("\n") != expected:
            raise SystemExit(f"bench: {prog.name}: 330 KB stream: output differs from the input "
                             f"({len(run.stdout)} bytes vs {len(expected)})")
        return run

    def as_stream_json(prog: Program) -> Run:
        reset(srv)
        srv.push(resp)
        return checked(srv, run_program(prog, ["-p", "write the long answer", *prog.stream_json], work,
                                        keep_stdout=False), f"{prog.name}: 330 KB stream (stream-json)", 1)

    runs = interleaved(progs, repeat, lambda prog: (as_text(prog), as_stream_json(prog)))
    return {name: {"bytes": len(md.encode()), "deltas": -(-len(md) // 8),
                   "text": medians([t for t, _ in pairs]), "stream_json": medians([j for _, j in pairs])}
            for name, pairs in runs.items()}


def bench_overlap(srv: LoopbackServer, progs: list[Program], work: Path, repeat: int) -> dict[str, dict[str, Any]]:
    def once(prog: Program) -> tuple[float, float, float]:
        reset(srv)
        first = TimedResponse.of(reply(
            tool_use("Bash", {"command": "sleep 1", "description": "wait"}, delay_before=0.0),
            tool_use("Bash", {"command": "sleep 1", "description": "wait"}, delay_before=0.7),
            tool_use("Bash", {"command": "sleep 1", "description": "wait"}, delay_before=0.7),
        ))
        srv.push(first, reply("All three finished."))
        args = ["-p", "wait three times", "--output-format", "text", *prog.extra.get("overlap", [])]
        run = checked(srv, run_program(prog, args, work), f"{prog.name}: tool overlap", 2)
        results = [b for b in srv.requests[1].body["messages"][-1]["content"] if b.get("type") == "tool_result"]
        if len(results) != 3 or any(b.get("is_error") for b in results):
            raise SystemExit(f"bench: {prog.name}: tool overlap: the tools did not all succeed: {results}")
        assert first.sent_at is not None
        ideal = first.sent_at + TOOL_SECONDS
        return srv.requests[1].time - ideal, first.sent_at - srv.requests[0].time, run.wall

    runs = interleaved(progs, repeat, once)
    return {name: {"diff": statistics.median(r[0] for r in rs), "stream_span": statistics.median(r[1] for r in rs),
                   "wall": statistics.median(r[2] for r in rs)} for name, rs in runs.items()}


def bench_long(srv: LoopbackServer, progs: list[Program], work: Path, repeat: int) -> dict[str, dict[str, Any]]:
    folder = work / "long"
    folder.mkdir(exist_ok=True)
    files = []
    for i in range(LONG_TURNS):
        f = folder / f"part_{i:03}.py"
        f.write_text("".join(f"value_{i}_{n} = 'a line of a long session, number {n * i:>8}'\n" for n in range(110)))
        files.append(f)
    script = [reply(text(f"Reading part {i}."), tool_use("Read", {"file_path": str(f)}), usage=LONG_USAGE)
              for i, f in enumerate(files)]
    script.append(reply("All parts read.", usage=LONG_USAGE))
    sizes: list[int] = []

    def keep_last(received: Any) -> None:
        # Only the newest body is kept: 500 parsed bodies of up to 4 MB would be gigabytes.
        sizes.append(int(received.headers.get("content-length") or 0))
        if len(srv.requests) > 1:
            srv.requests[-2].body, srv.requests[-2].raw = {}, b""

    def once(prog: Program) -> dict[str, float]:
        reset(srv)
        sizes.clear()
        srv.push(*script)
        srv.on_request = keep_last
        try:
            run = run_program(prog, ["-p", "read every part", "--output-format", "text"], work)
        finally:
            srv.on_request = None
        checked(srv, run, f"{prog.name}: {LONG_TURNS} turns", LONG_TURNS + 1)
        mb = (sizes[-1] - sizes[10]) / 1e6
        out = {"mb": sizes[-1] / 1e6, "wall": run.wall, "cpu": run.cpu, "rss": run.rss_mb}
        for key, end in (("own", lambda r: r.started), ("sent", lambda r: r.time)):
            gaps = [end(srv.requests[i + 1]) - srv.answered[i] for i in range(LONG_TURNS)]
            early, late = statistics.median(gaps[5:16]), statistics.median(gaps[-11:])
            out |= {f"{key}_early": early, f"{key}_late": late, f"{key}_growth": late / early,
                    f"{key}_per_mb": (late - early) / mb}
        return out

    runs = interleaved(progs, repeat, once)
    out = {}
    for name, rs in runs.items():
        out[name] = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        out[name] |= {f"{key}_growths": [r[f"{key}_growth"] for r in rs] for key in ("own", "sent")}
    return out


# ---------------------------------------------------------------- report


def table(rows: list[tuple[str, ...]]) -> str:
    header = ("scenario", "metric", "agent-tui", "Claude Code", "ratio", "target", "verdict")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(tuple("-" * w for w in widths)), *map(line, rows)])


def row(scenario: str, metric: str, ours: float, theirs: float | None, fmt: str = "{:.3f}",
        absolute: float | None = None, relative: float | None = None) -> tuple[str, ...]:
    """A table row: the figures, their ratio, and whether the targets hold."""
    ratio = ours / theirs if theirs else None
    targets, checks = [], []
    if absolute is not None:
        targets.append(f"<= {absolute:g}")
        checks.append(ours <= absolute)
    if relative is not None:
        targets.append(f"<= {relative:g}x")
        if ratio is not None:
            checks.append(ratio <= relative)
    verdict = ("meets" if all(checks) else "MISSES") if checks else "-"
    return (scenario, metric, fmt.format(ours), fmt.format(theirs) if theirs is not None else "-",
            f"{ratio:.2f}x" if ratio is not None else "-", " and ".join(targets) or "-", verdict)


def long_rows(r: dict[str, dict[str, Any]], pick: Callable[..., tuple[float, float | None]]) -> list[tuple[str, ...]]:
    scen = f"{LONG_TURNS} turns ({r['agent-tui']['mb']:.1f} MB)"
    ms = lambda pair: tuple(x * 1000 if x is not None else None for x in pair)  # noqa: E731
    rows = []
    for key, what in (("own", "gap to request start"), ("sent", "gap to request read")):
        spread = ", ".join(f"{g:.2f}" for g in r["agent-tui"][f"{key}_growths"])
        rows += [
            row(scen, f"{what}, turn 10 ms", *ms(pick(r, f"{key}_early")), fmt="{:.1f}"),
            row(scen, f"{what}, turn 500 ms", *ms(pick(r, f"{key}_late")), fmt="{:.1f}"),
            row(scen, f"{what}, turn 500 / turn 10 (runs: {spread})", *pick(r, f"{key}_growth"), fmt="{:.2f}",
                absolute=LONG_GROWTH),
            row(scen, f"{what}, growth ms per MB", *ms(pick(r, f"{key}_per_mb")), fmt="{:.2f}"),
        ]
    return rows + [
        row(scen, "wall s", *pick(r, "wall"), fmt="{:.1f}"),
        row(scen, "CPU s", *pick(r, "cpu"), fmt="{:.1f}"),
        row(scen, "peak RSS MB", *pick(r, "rss"), fmt="{:.1f}"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_print", description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median reported)")
    parser.add_argument("--only", choices=("turns", "stream", "overlap", "long"), action="append",
                        help="run only these scenarios")
    args = parser.parse_args(argv)
    only = set(args.only or ("turns", "stream", "overlap", "long"))
    claude = find_claude()
    print(f"agent-tui: {find_agent()}  (python {sys.version.split()[0]}, {args.repeat} runs each)", flush=True)
    print(f"  {compile_agent(find_agent())}", flush=True)
    print(f"Claude Code: {f'{claude} ({claude_version(claude)})' if claude else 'not found (set CLAUDE_CODE_BIN)'}",
          flush=True)

    rows: list[tuple[str, ...]] = []
    with LoopbackServer() as srv, tempfile.TemporaryDirectory(prefix="agent-tui-bench-") as tmp:
        work = Path(tmp)
        progs = programs(srv.url, work)

        def pick(results: dict[str, Any], *keys: str) -> tuple[float, float | None]:
            def get(name: str) -> Any:
                value = results[name]
                for k in keys:
                    value = value[k]
                return value
            return get("agent-tui"), (get("claude") if "claude" in results else None)

        if "turns" in only:
            t = bench_turns(srv, progs, work, args.repeat)
            per_turn = {name: (r["reads"]["wall"] - r["base"]["wall"]) / (READ_TURNS + 1) for name, r in t.items()}
            rows += [
                row("startup (1 turn)", "wall s", *pick(t, "base", "wall")),
                row("startup (1 turn)", "CPU s", *pick(t, "base", "cpu")),
                row("startup (1 turn)", "peak RSS MB", *pick(t, "base", "rss"), fmt="{:.1f}", absolute=RSS_TARGET_MB),
                row("10 Reads (11 turns)", "wall s", *pick(t, "reads", "wall")),
                row("10 Reads (11 turns)", "CPU s", *pick(t, "reads", "cpu")),
                row("10 Reads (11 turns)", "peak RSS MB", *pick(t, "reads", "rss"), fmt="{:.1f}",
                    absolute=RSS_TARGET_MB),
                row("10 Reads (11 turns)", "per-turn overhead ms", per_turn["agent-tui"] * 1000,
                    per_turn["claude"] * 1000 if "claude" in per_turn else None, fmt="{:.1f}",
                    relative=OVERHEAD_RATIO),
                row("10 Reads (11 turns)", "request-to-request gap ms", *(x * 1000 if x is not None else None
                                                                          for x in pick(t, "gap")),
                    fmt="{:.1f}", relative=OVERHEAD_RATIO),
            ]
        if "stream" in only:
            s = bench_stream(srv, progs, work, args.repeat)
            ours = s["agent-tui"]
            name = f"{ours['bytes'] // 1000} KB stream"
            for fmt, key in (("text", "text"), ("stream-json", "stream_json")):
                scen = f"{name} ({fmt})"
                rows += [
                    row(scen, "wall s", *pick(s, key, "wall"), relative=1.0),
                    row(scen, "CPU s", *pick(s, key, "cpu"), relative=0.8),
                    row(scen, "peak RSS MB", *pick(s, key, "rss"), fmt="{:.1f}", absolute=RSS_TARGET_MB),
                ]
            rows.append((f"{name} (text)", "output == input", "yes", "yes" if "claude" in s else "-", "-", "yes",
                         f"meets ({ours['deltas']} deltas)"))
        if "overlap" in only:
            o = bench_overlap(srv, progs, work, args.repeat)
            diff, other = pick(o, "diff")
            rows += [
                row("tool overlap (3 x 1 s)", "last block stop after request s", *pick(o, "stream_span")),
                row("tool overlap (3 x 1 s)", "tool phase end - ideal ms", diff * 1000,
                    other * 1000 if other is not None else None, fmt="{:+.0f}",
                    absolute=OVERLAP_TARGET * TOOL_SECONDS * 1000),
            ]
        if "long" in only:
            rows += long_rows(bench_long(srv, progs, work, args.repeat), pick)
    print()
    print(table(rows))
    print("\nratio = agent-tui / Claude Code.  per-turn overhead = (wall of 11 turns - wall of 1 turn) / 11."
          "\nideal tool phase end = last content_block_stop written + 1 s."
          f"\n{LONG_TURNS} turns: gap = the last byte of an answer -> the next request's first byte (start) or the"
          " whole request read (read: the body's trip through the loopback included); turn 10 = median of turns 5-15,"
          " turn 500 = median of the last 11.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
