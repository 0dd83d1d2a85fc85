"""Context-pipeline benchmark: what the pre-request pipeline costs on a 150k-token history.

    python -m tests.bench.bench_context [--repeat N] [--tokens N]

The history is one prompt followed by tool rounds, as a long agentic session
leaves it: mostly Read results of about 12k characters, with now and then a
Bash log of 40k (over the 30k Bash cap) or a Grep listing of 28k (over the 20k
Grep cap), and a line of text before each call.  Token figures are chars/4 and
include the system prompt and the tool definitions (about 9k).

Run A, default settings (200k window, 32k max output): each step alone on what
it would receive (median of `--repeat` runs, default 30), then the whole
pipeline (`prepare`) on the first request after the big results, in the
steady state every later request pays, and on a 150k history of Read results
that no step shrinks (microcompact off): the per-request cost when the whole
history stays, with and without a usage to count from.  Target: under 20 ms.

Run B, auto-compact threshold at 50% and microcompact off, so that autocompact
fires: the whole pipeline including the summary request, which goes through the
real SDK to an instant loopback server (the engine's own cost plus one local
HTTP round trip).  Row A1 includes writing the saved results to disk, which
varies with the file system; it is paid once per large result.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_tui.engine.context.pipeline import apply_tool_result_budget, microcompact, prepare
from agent_tui.engine.context.window import (
    CompactionSettings,
    ContextTracking,
    PipelineEnv,
    count_tokens,
    estimate_tokens,
)
from agent_tui.engine.loop.attempts import RetryPolicy
from agent_tui.engine.messages import assistant_message, tool_result_block, user_message
from agent_tui.engine.models.anthropic import AnthropicModel
from agent_tui.engine.session import build_system_prompt
from agent_tui.tools.base import tool_to_api
from agent_tui.tools.registry import default_tools
from tests.loopback import LoopbackServer, reply

TARGET_MS = 20.0
WINDOW = 200_000
MAX_OUTPUT = 32_000


def build_history(tokens: int, *, reads_only: bool = False) -> list[dict[str, Any]]:
    """Tool rounds until the chars/4 estimate reaches `tokens`."""
    def read(n: int) -> str:
        return "".join(f"{i:>6}\tdef handler_{n}_{i}(request): return render(request)\n" for i in range(190))

    def log(n: int) -> str:
        return "".join(f"tests/test_{n}.py::test_case_{i} PASSED [{i % 100:>3}%]\n" for i in range(700))

    def grep(n: int) -> str:
        return "".join(f"src/pkg{n}/module_{i}.py:{i}: # TODO: handle the error case\n" for i in range(500))

    kinds = [("Read", read)] * 10 + [("Bash", log)] + [("Read", read)] * 10 + [("Grep", grep)]
    if reads_only:
        kinds = [("Read", read)]
    messages = [user_message("Audit the repository: read the modules, run the tests, and list every TODO.")]
    n = 0
    while estimate_tokens(messages) < tokens:
        name, make = kinds[n % len(kinds)]
        tid = f"toolu_bench_{n:04d}"
        messages.append(assistant_message([
            {"type": "text", "text": f"Step {n}: running {name} to look at the next part of the code base."},
            {"type": "tool_use", "id": tid, "name": name, "input": {"file_path": f"src/module_{n}.py"}},
        ]))
        messages.append(user_message([tool_result_block(tid, make(n))]))
        n += 1
    return messages


def median_ms(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), result


def make_env(model: Any, save_dir: Path, *, window: int = WINDOW) -> PipelineEnv:
    tools = default_tools()
    return PipelineEnv(
        model=model,
        model_name="claude-sonnet-4-6",
        window=window,
        max_output=MAX_OUTPUT,
        system=build_system_prompt(Path.cwd(), tools, "claude-sonnet-4-6"),
        tools=[tool_to_api(t) for t in tools],
        settings=CompactionSettings(),
        save_dir=save_dir,
        emit=lambda event: None,
        abort=asyncio.Event(),
        retry=RetryPolicy(max_retries=0),
    )


async def run(repeat: int, tokens: int) -> list[tuple[str, float, int, int]]:
    rows: list[tuple[str, float, int, int]] = []
    settings = CompactionSettings()
    history = build_history(tokens)
    with tempfile.TemporaryDirectory() as tmp, LoopbackServer() as srv:
        save_dir = Path(tmp) / "tool-results"
        model = AnthropicModel("claude-sonnet-4-6", base_url=srv.url, api_key="bench")
        env = make_env(model, save_dir)

        def size(messages: list[dict[str, Any]]) -> int:
            return env.overhead + estimate_tokens(messages)

        # A fresh folder per run: in a session each large result is saved once.
        runs = iter(range(10**9))
        ms, (budgeted, record) = median_ms(
            lambda: apply_tool_result_budget(history, settings=settings, save_dir=save_dir / f"a1-{next(runs)}"), repeat
        )
        rows.append((f"A1. tool-result budget ({record.items} results saved)", ms, size(history), size(budgeted)))
        ms, (cleared, record) = median_ms(lambda: microcompact(budgeted, keep=settings.microcompact_keep), repeat)
        soft = settings.microcompact_threshold(WINDOW)
        where = "over" if size(budgeted) > soft else "under, run anyway"
        rows.append((f"A2. microcompact ({where} {soft:,}: {record.items} cleared)", ms, size(budgeted), size(cleared)))
        ms, over = median_ms(lambda: count_tokens(cleared, ContextTracking(), env.overhead) > env.threshold, repeat)
        rows.append((f"A3. autocompact check ({'over' if over else 'under'} {env.threshold:,})", ms,
                     size(cleared), size(cleared)))

        prepared = None
        first = []
        for n in range(repeat):
            fresh = replace(env, save_dir=save_dir / f"a4-{n}")
            started = time.perf_counter()
            prepared = await prepare(history, ContextTracking(), fresh)
            first.append((time.perf_counter() - started) * 1000)
        assert prepared is not None
        rows.append(("A4. whole pipeline, first request", statistics.median(first), size(history), size(prepared.messages)))
        steady = []
        for _ in range(repeat):
            started = time.perf_counter()
            again = await prepare(prepared.messages, ContextTracking(), env)
            steady.append((time.perf_counter() - started) * 1000)
        rows.append(("A5. whole pipeline, steady state", statistics.median(steady),
                     size(prepared.messages), size(again.messages)))

        # The worst case every request could pay: 150k tokens that no step can shrink.
        full = build_history(tokens, reads_only=True)
        keep_all = replace(env, settings=CompactionSettings(microcompact_percent=100))
        anchored = ContextTracking().with_usage({"input_tokens": size(full) - 500}, messages=len(full) - 1)
        for label, tracking in (("no usage yet: all estimated", ContextTracking()), ("after a usage", anchored)):
            nothing = []
            for _ in range(repeat):
                started = time.perf_counter()
                kept = await prepare(full, tracking, keep_all)
                nothing.append((time.perf_counter() - started) * 1000)
            rows.append((f"A6. whole pipeline, nothing to free ({label})", statistics.median(nothing),
                         size(full), size(kept.messages)))

        forced = replace(env, settings=CompactionSettings(threshold_percent=50, microcompact_percent=100))
        srv.handler = lambda body, index: reply("<summary>" + "The audit so far: modules read, tests pass. " * 40 + "</summary>")
        durations = []
        for n in range(max(3, repeat // 5)):
            fresh = replace(forced, save_dir=save_dir / f"b-{n}")
            started = time.perf_counter()
            compacted = await prepare(history, ContextTracking(), fresh)
            durations.append((time.perf_counter() - started) * 1000)
        rows.append(("B.  whole pipeline, autocompact firing (summary via loopback)", statistics.median(durations),
                     size(history), compacted.tokens))
        for step in compacted.steps:
            rows.append((f"    freed by {step.step}", 0.0, step.tokens_freed, 0))
        await model.aclose()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_context", description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=150_000, help="history size (chars/4) to build")
    args = parser.parse_args(argv)
    rows = asyncio.run(run(args.repeat, args.tokens))
    width = max(len(r[0]) for r in rows)
    print(f"context pipeline on a {args.tokens:,}-token history (window {WINDOW:,}), median of {args.repeat} runs\n")
    print(f"{'step':<{width}}  {'ms':>8}  {'tokens in':>10}  {'tokens out':>10}  {'freed':>8}")
    for name, ms, before, after in rows:
        if name.startswith("    freed"):
            print(f"{name:<{width}}  {'':>8}  {'':>10}  {'':>10}  {before:>8,}")
        else:
            print(f"{name:<{width}}  {ms:>8.2f}  {before:>10,}  {after:>10,}  {before - after:>8,}")
    worst = max(ms for name, ms, *_ in rows if name.startswith(("A5.", "A6.")))
    verdict = "meets" if worst < TARGET_MS else "MISSES"
    print(f"\nper-request cost on a 150k history, worst of A5/A6: {worst:.2f} ms — {verdict} the {TARGET_MS:.0f} ms target")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
