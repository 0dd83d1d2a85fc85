"""`python -m tests.eval`: run the repository tasks against the configured model; print a pass table.

Exits 0 when every task passed, 1 when one failed, and 0 with a note when no model is configured
(the offline demo model is not counted)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .harness import configured_model, run_all, table
from .tasks import TASKS


def main(argv: list[str] | None = None) -> int:
    names = [task.name for task in TASKS]
    parser = argparse.ArgumentParser(prog="python -m tests.eval", description=__doc__)
    parser.add_argument("--task", action="append", choices=names, help="run only this task (repeatable)")
    parser.add_argument("--model", help="the model to ask (agent-tui's --model)")
    parser.add_argument("--max-turns", type=int, default=40)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds one task may take")
    parser.add_argument("--keep", type=Path, help="generate the repositories here and keep them")
    args = parser.parse_args(argv)
    model = configured_model()
    if model is None:
        print("tests.eval: skipped: no model is configured (set ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL for a "
              "local server, or the OpenAI provider); the offline demo model is not counted")
        return 0
    tasks = [task for task in TASKS if not args.task or task.name in args.task]
    print(f"tests.eval: {len(tasks)} task(s) against {args.model or model}", flush=True)
    extra = ["--model", args.model] if args.model else []
    outcomes = run_all(tasks, max_turns=args.max_turns, timeout=args.timeout, keep=args.keep, extra_args=extra)
    print(table(outcomes))
    return 0 if all(o.verdict.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
