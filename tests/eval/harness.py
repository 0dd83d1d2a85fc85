"""Run the evaluation's tasks against the configured model and judge each run.

Each task's repository is generated in a temporary folder and handed to `agent-tui -p` (the
installed package, `python -m agent_tui`) with `--permission-mode bypassPermissions` (the
repositories are throwaway) and `--output-format json`; the judge then reads the repository
and the final answer.  The model is whatever agent-tui would use there: `ANTHROPIC_API_KEY`,
`ANTHROPIC_BASE_URL` (a local server), or the OpenAI provider (`AGENT_TUI_PROVIDER=openai`, or
`provider` in the settings).  Without one agent-tui falls back to its offline demo model, which
is not counted: the run is skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .tasks import TASKS, Task, Verdict


@dataclass(frozen=True, slots=True)
class Outcome:
    task: str
    verdict: Verdict
    turns: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    seconds: float
    model: str


def configured_model(env: Mapping[str, str] | None = None, cwd: Path | None = None) -> str | None:
    """The model agent-tui would use (by its label); None when it would be the offline demo model."""
    from agent_tui.cli import choose_model
    from agent_tui.config import load_settings

    saved = dict(os.environ)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        model = choose_model(load_settings(cwd or Path.cwd()))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return None if model.offline else model.label


def run_task(task: Task, root: Path, *, env: Mapping[str, str], max_turns: int, timeout: float,
             extra_args: Iterable[str] = ()) -> Outcome:
    repo = task.make_repo(root)
    command = [sys.executable, "-m", "agent_tui", "-p", task.prompt, "--output-format", "json",
               "--permission-mode", "bypassPermissions", "--max-turns", str(max_turns), *extra_args]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=repo, env=dict(env), capture_output=True, text=True, timeout=timeout)
        result = _result(done.stdout)
        problem = None if result else f"no result (exit {done.returncode}): {done.stderr.strip()[-200:]}"
    except subprocess.TimeoutExpired:
        result, problem = {}, f"timed out after {timeout:g} s"
    seconds = time.monotonic() - started
    if problem is not None:
        verdict = Verdict(False, problem)
    else:
        try:
            verdict = task.judge(repo, str(result.get("result") or ""))
        except Exception as exc:  # a judge that cannot run is a failed task, said as such
            verdict = Verdict(False, f"judge failed: {type(exc).__name__}: {exc}")
    usage = result.get("usage") or {}
    return Outcome(
        task=task.name, verdict=verdict, turns=int(result.get("num_turns") or 0),
        input_tokens=sum(int(usage.get(k) or 0) for k in
                         ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")),
        output_tokens=int(usage.get("output_tokens") or 0), cost_usd=result.get("total_cost_usd"),
        seconds=seconds, model=str(result.get("model") or ""))


def _result(stdout: str) -> dict[str, Any]:
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") == "result":
            return value
    return {}


def run_all(tasks: Iterable[Task] = TASKS, *, env: Mapping[str, str] | None = None, max_turns: int = 40,
            timeout: float = 900.0, keep: Path | None = None, extra_args: Iterable[str] = ()) -> list[Outcome]:
    """Run every task (one after the other) and judge it."""
    env = dict(os.environ if env is None else env)
    with tempfile.TemporaryDirectory(prefix="agent-tui-eval-") as scratch:
        root = keep or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        return [run_task(task, root, env=env, max_turns=max_turns, timeout=timeout, extra_args=extra_args)
                for task in tasks]


def table(outcomes: list[Outcome]) -> str:
    """The pass table: one row a task and a total."""
    rows = [("task", "result", "turns", "input tok", "output tok", "cost", "time", "detail")]
    for o in outcomes:
        rows.append((o.task, "PASS" if o.verdict.passed else "FAIL", str(o.turns), f"{o.input_tokens:,}",
                     f"{o.output_tokens:,}", _cost(o.cost_usd), f"{o.seconds:.1f}s", o.verdict.detail))
    passed = sum(o.verdict.passed for o in outcomes)
    costs = [o.cost_usd for o in outcomes]
    total = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
    rows.append((f"{passed}/{len(outcomes)} passed", "", str(sum(o.turns for o in outcomes)),
                 f"{sum(o.input_tokens for o in outcomes):,}", f"{sum(o.output_tokens for o in outcomes):,}",
                 _cost(total), f"{sum(o.seconds for o in outcomes):.1f}s", ""))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for n, row in enumerate(rows):
        cells = [cell.ljust(width) if i in (0, 1) else cell.rjust(width) for i, (cell, width) in
                 enumerate(zip(row, widths, strict=False))]
        lines.append("  ".join(cells + [row[-1]]).rstrip())
        if n in (0, len(rows) - 2):
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cost(value: float | None) -> str:
    return "—" if value is None else f"${value:.4f}"
