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
   `stream-json`.
3. tool overlap: three 1 s read-only tools (`Bash sleep 1`) streamed over
   ~1.4 s; the tool phase ends when the follow-up request arrives.  Ideal:
   the last content_block_stop + 1 s.

Peer figures: Claude Code 2.1.332 in print mode on the same kind of machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.loopback import LoopbackServer, Response, reply, text, tool_use

# ---------------------------------------------------------------- targets and peer figures

PEER_10_READS = {"wall": 0.89, "cpu": 1.0, "rss": 263.0}
PEER_STREAM = {"cpu": 1.73, "rss": 300.0}
RSS_TARGET_MB = 100.0
OVERLAP_TARGET = 0.10  # tool phase end within 10% of the ideal
TOOL_SECONDS = 1.0
STREAM_BYTES = 330_000
READ_TURNS = 10


# ---------------------------------------------------------------- running the child


def find_agent() -> str:
    beside = Path(sys.executable).parent / "agent-tui"
    if beside.exists():
        return str(beside)
    found = shutil.which("agent-tui")
    if found:
        return found
    raise SystemExit("agent-tui is not installed (neither beside the interpreter nor on PATH)")


def child_env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["ANTHROPIC_BASE_URL"] = url
    env["ANTHROPIC_API_KEY"] = "test"
    # Transcripts and settings of benchmark runs stay out of the user's folders.
    scratch = Path(tempfile.gettempdir()) / "agent-tui-bench"
    env["AGENT_TUI_DATA_DIR"] = str(scratch / "data")
    env["AGENT_TUI_CONFIG_DIR"] = str(scratch / "config")
    return env


@dataclass
class Run:
    wall: float  # seconds, spawn to reaped
    cpu: float  # user + sys seconds of the child (and its reaped children)
    rss_mb: float  # peak RSS
    code: int
    stdout: bytes
    stderr: bytes


def run_agent(args: list[str], cwd: Path, env: dict[str, str], *, keep_stdout: bool = True) -> Run:
    """Run `agent-tui ARGS`; stdout goes to a file (or /dev/null), measured with wait4."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sink = out if keep_stdout else subprocess.DEVNULL
        started = time.monotonic()
        proc = subprocess.Popen([find_agent(), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=sink, stderr=err)
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


def median_runs(repeat: int, once: Callable[[], Run]) -> dict[str, float]:
    return medians([once() for _ in range(repeat)])


def medians(runs: list[Run]) -> dict[str, float]:
    return {
        "wall": statistics.median(r.wall for r in runs),
        "cpu": statistics.median(r.cpu for r in runs),
        "rss": statistics.median(r.rss_mb for r in runs),
    }


def bench_turns(srv: LoopbackServer, env: dict[str, str], work: Path, repeat: int) -> dict[str, Any]:
    files = []
    for i in range(READ_TURNS):
        f = work / f"module_{i}.py"
        f.write_text("".join(f"value_{i}_{n} = {n * i}\n" for n in range(40)))
        files.append(f)

    def baseline() -> Run:
        reset(srv)
        srv.push(reply("Nothing to do."))
        return checked(srv, run_agent(["-p", "say hi", "--output-format", "text"], work, env),
                       "1-turn baseline", 1)

    def ten_reads() -> Run:
        reset(srv)
        srv.push(*(reply(text("Reading the next file."), tool_use("Read", {"file_path": str(f)}))
                   for f in files))
        srv.push(reply("All ten files read."))
        run = run_agent(["-p", "read the ten modules", "--output-format", "text"], work, env)
        run = checked(srv, run, "10 Read turns", READ_TURNS + 1)
        if run.stdout.decode().strip() != "All ten files read.":
            raise SystemExit(f"bench: 10 Read turns: unexpected output {run.stdout[:200]!r}")
        last = srv.requests[-1].body["messages"]
        if "value_9_39" not in str(last[-1]):
            raise SystemExit("bench: 10 Read turns: the last Read result did not reach the model")
        times = [q.time for q in srv.requests]
        gaps.append(statistics.median(b - a for a, b in zip(times, times[1:])))
        return run

    # Interleaved, so that load from elsewhere hits the baseline and the 11-turn run alike.
    gaps: list[float] = []
    base_runs, read_runs = [], []
    for _ in range(repeat):
        base_runs.append(baseline())
        read_runs.append(ten_reads())
    return {"base": medians(base_runs), "reads": medians(read_runs), "gap": statistics.median(gaps)}


def bench_stream(srv: LoopbackServer, env: dict[str, str], work: Path, repeat: int) -> dict[str, Any]:
    md = markdown_answer()
    resp = reply(text(md), chunk=8)
    expected = md.rstrip("\n").encode() + b"\n"

    def as_text() -> Run:
        reset(srv)
        srv.push(resp)
        run = checked(srv, run_agent(["-p", "write the long answer", "--output-format", "text"], work, env),
                      "330 KB stream (text)", 1)
        if run.stdout != expected:
            raise SystemExit(f"bench: 330 KB stream: output differs from the input "
                             f"({len(run.stdout)} bytes vs {len(expected)})")
        return run

    def as_stream_json() -> Run:
        reset(srv)
        srv.push(resp)
        return checked(srv, run_agent(["-p", "write the long answer", "--output-format", "stream-json"], work, env,
                                      keep_stdout=False), "330 KB stream (stream-json)", 1)

    return {"bytes": len(md.encode()), "deltas": -(-len(md) // 8),
            "text": median_runs(repeat, as_text), "stream_json": median_runs(repeat, as_stream_json)}


def bench_overlap(srv: LoopbackServer, env: dict[str, str], work: Path, repeat: int) -> dict[str, Any]:
    diffs = []
    spans = []
    walls = []
    for _ in range(repeat):
        reset(srv)
        first = TimedResponse.of(reply(
            tool_use("Bash", {"command": "sleep 1", "description": "wait"}, delay_before=0.0),
            tool_use("Bash", {"command": "sleep 1", "description": "wait"}, delay_before=0.7),
            tool_use("Bash", {"command": "sleep 1", "description": "wait"}, delay_before=0.7),
        ))
        srv.push(first, reply("All three finished."))
        run = checked(srv, run_agent(["-p", "wait three times", "--output-format", "text"], work, env),
                      "tool overlap", 2)
        results = [b for b in srv.requests[1].body["messages"][-1]["content"] if b.get("type") == "tool_result"]
        if len(results) != 3 or any(b.get("is_error") for b in results):
            raise SystemExit(f"bench: tool overlap: the tools did not all succeed: {results}")
        assert first.sent_at is not None
        ideal = first.sent_at + TOOL_SECONDS
        diffs.append(srv.requests[1].time - ideal)
        spans.append(first.sent_at - srv.requests[0].time)
        walls.append(run.wall)
    return {"diff": statistics.median(diffs), "stream_span": statistics.median(spans),
            "wall": statistics.median(walls)}


# ---------------------------------------------------------------- report


def verdict(value: float, limit: float) -> str:
    return f"{'meets' if value <= limit else 'MISSES'} ({value / limit:.2f}x)"


def table(rows: list[tuple[str, ...]]) -> str:
    header = ("scenario", "metric", "agent-tui (median)", "target", "peer", "verdict")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(tuple("-" * w for w in widths)), *map(line, rows)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_print", description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median reported)")
    parser.add_argument("--only", choices=("turns", "stream", "overlap"), action="append",
                        help="run only these scenarios")
    args = parser.parse_args(argv)
    only = set(args.only or ("turns", "stream", "overlap"))
    print(f"agent-tui: {find_agent()}  (python {sys.version.split()[0]}, {args.repeat} runs each)", flush=True)

    rows: list[tuple[str, ...]] = []
    with LoopbackServer() as srv, tempfile.TemporaryDirectory(prefix="agent-tui-bench-") as tmp:
        work = Path(tmp)
        env = child_env(srv.url)
        if "turns" in only:
            t = bench_turns(srv, env, work, args.repeat)
            b, r = t["base"], t["reads"]
            per_turn = (r["wall"] - b["wall"]) / (READ_TURNS + 1)
            rows += [
                ("startup (1 turn)", "wall s", f"{b['wall']:.3f}", "-", "-", "-"),
                ("startup (1 turn)", "CPU s", f"{b['cpu']:.3f}", "-", "-", "-"),
                ("startup (1 turn)", "peak RSS MB", f"{b['rss']:.1f}", f"<= {RSS_TARGET_MB:.0f}", "-",
                 verdict(b["rss"], RSS_TARGET_MB)),
                ("10 Reads (11 turns)", "wall s", f"{r['wall']:.3f}", f"<= {PEER_10_READS['wall']}",
                 f"{PEER_10_READS['wall']}", verdict(r["wall"], PEER_10_READS["wall"])),
                ("10 Reads (11 turns)", "CPU s", f"{r['cpu']:.3f}", f"<= {PEER_10_READS['cpu']}",
                 f"{PEER_10_READS['cpu']}", verdict(r["cpu"], PEER_10_READS["cpu"])),
                ("10 Reads (11 turns)", "peak RSS MB", f"{r['rss']:.1f}", f"<= {RSS_TARGET_MB:.0f}",
                 f"{PEER_10_READS['rss']:.0f}", verdict(r["rss"], RSS_TARGET_MB)),
                ("10 Reads (11 turns)", "per-turn overhead ms", f"{per_turn * 1000:.1f}", "-", "-",
                 "(wall - startup) / 11"),
                ("10 Reads (11 turns)", "request-to-request gap ms", f"{t['gap'] * 1000:.1f}", "-", "-",
                 "server side, median of 10"),
            ]
        if "stream" in only:
            s = bench_stream(srv, env, work, args.repeat)
            name = f"{s['bytes'] // 1000} KB stream"
            for fmt, m in (("text", s["text"]), ("stream-json", s["stream_json"])):
                scen = f"{name} ({fmt})"
                rows += [
                    (scen, "wall s", f"{m['wall']:.3f}", "-", "-", "-"),
                    (scen, "CPU s", f"{m['cpu']:.3f}", f"<= {PEER_STREAM['cpu']}", f"{PEER_STREAM['cpu']}",
                     verdict(m["cpu"], PEER_STREAM["cpu"])),
                    (scen, "peak RSS MB", f"{m['rss']:.1f}", f"<= {RSS_TARGET_MB:.0f}", f"{PEER_STREAM['rss']:.0f}",
                     verdict(m["rss"], RSS_TARGET_MB)),
                ]
            rows.append((f"{name} (text)", "output == input", "yes", "yes", "-", f"meets ({s['deltas']} deltas)"))
        if "overlap" in only:
            o = bench_overlap(srv, env, work, args.repeat)
            pct = o["diff"] / TOOL_SECONDS
            rows += [
                ("tool overlap (3 x 1 s)", "last block stop after request s", f"{o['stream_span']:.3f}",
                 "~1.4", "-", "-"),
                ("tool overlap (3 x 1 s)", "tool phase end - ideal ms", f"{o['diff'] * 1000:+.0f}",
                 f"<= +{OVERLAP_TARGET * TOOL_SECONDS * 1000:.0f}", "0 (at ideal)",
                 f"{'meets' if pct <= OVERLAP_TARGET else 'MISSES'} ({pct * 100:+.1f}% of the 1 s ideal)"),
            ]
    print()
    print(table(rows))
    print("\nideal tool phase end = last content_block_stop written + 1 s; % relative to that 1 s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
