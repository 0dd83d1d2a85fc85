"""tests/eval's harness judged on the loopback server: a scripted solver solves two tasks and gets
two wrong, and the pass table says so, with tokens and cost; without a model the run is skipped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.eval.harness import configured_model, run_all, table
from tests.eval.tasks import TASKS
from tests.loopback import Response, reply, text, tool_use
from tests.test_print_mode import env_for

ROOT = Path(__file__).resolve().parent.parent

# Per task (by its prompt), the solver's answer at each step (the number of assistant messages so far).
SOLVER: dict[str, list[Response]] = {
    "fix-failing-test": [  # solved: the sign in sell()
        reply(tool_use("Bash", {"command": r"sed -i 's/levels\[item\] + count/levels[item] - count/' inventory.py"
                                           " && python -m unittest -q"}, id="toolu_fix")),
        reply(text("Fixed: `inventory.py:15` added the sold units instead of taking them away.")),
    ],
    "add-cli-flag": [  # wrong: the flag is accepted but changes nothing
        reply(tool_use("Bash", {"command": r"""sed -i 's/    parser.add_argument("name")/&\n    """
                                           r"""parser.add_argument("--shout", "-s", action="store_true")/' greet.py"""},
                       id="toolu_flag")),
        reply(text("Added --shout.")),
    ],
    "rename-function": [  # solved
        reply(tool_use("Bash", {"command": "sed -i 's/compute_total/sum_prices/g' *.py && python -m unittest -q"},
                       id="toolu_rename")),
        reply(text("Renamed compute_total to sum_prices in prices.py, orders.py and report.py.")),
    ],
    "explain-bug": [  # wrong: blames the wrong function and line
        reply(text("The bug is in mean at `stats.py:5`: it divides by zero for an empty list.")),
    ],
}


def _solver(body: dict[str, Any], _index: int) -> Response | None:
    prompt = body["messages"][0]["content"][0]["text"]
    task = next(t.name for t in TASKS if t.prompt == prompt)
    step = sum(1 for m in body["messages"] if m["role"] == "assistant")
    script = SOLVER[task]
    return script[step] if step < len(script) else reply(text("Done."))


def test_the_harness_reports_pass_and_fail_as_the_judges_find_them(api, tmp_path):
    api.handler = _solver
    env = env_for(api.url)

    assert configured_model(env) == "claude-sonnet-4-6"
    outcomes = run_all(TASKS, env=env, keep=tmp_path / "repos", timeout=120)

    verdicts = {o.task: o.verdict for o in outcomes}
    assert {name: v.passed for name, v in verdicts.items()} == {
        "fix-failing-test": True, "add-cli-flag": False, "rename-function": True, "explain-bug": False}
    assert verdicts["fix-failing-test"].detail.startswith("unittest:")
    assert verdicts["add-cli-flag"].detail == "--shout: 'Hello, Ada!'"
    assert "line 13" in verdicts["explain-bug"].detail
    assert all(o.input_tokens > 0 and o.output_tokens > 0 and o.cost_usd for o in outcomes)
    assert [o.turns for o in outcomes] == [2, 2, 2, 1]
    shown = table(outcomes)
    assert "2/4 passed" in shown and shown.count("PASS") == 2 and shown.count("FAIL") == 2
    assert "$" in shown


def test_a_solver_that_edits_the_test_file_does_not_pass(api, tmp_path):
    api.handler = lambda body, i: [
        reply(tool_use("Bash", {"command": "sed -i 's/{\"pen\": 3}/{\"pen\": 7}/' test_inventory.py"}, id="t")),
        reply(text("Made the test pass.")),
    ][min(sum(m["role"] == "assistant" for m in body["messages"]), 1)]

    [outcome] = run_all(TASKS[:1], env=env_for(api.url), timeout=120)

    assert not outcome.verdict.passed and outcome.verdict.detail == "the test file was changed"


def test_without_a_model_the_run_is_skipped():
    done = subprocess.run([sys.executable, "-m", "tests.eval"], cwd=ROOT, env=env_for(), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout.startswith("tests.eval: skipped: no model is configured")


def test_the_harness_runs_on_the_openai_provider_too(tmp_path):
    import os

    from tests.openai_loopback import OpenAILoopback, call, chat

    fix = r"sed -i 's/levels\[item\] + count/levels[item] - count/' inventory.py"
    with OpenAILoopback() as oai:
        oai.handler = lambda body, i: [chat("Fixing.", call("Bash", {"command": fix}, id="call_fix")),
                                       chat("Fixed the sign in sell().")][min(i, 1)]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(AGENT_TUI_PROVIDER="openai", OPENAI_BASE_URL=oai.url + "/v1", OPENAI_API_KEY="sk-loopback")

        assert configured_model(env) == "gpt-4.1"
        [outcome] = run_all(TASKS[:1], env=env, timeout=120)

    assert outcome.verdict.passed and outcome.model == "gpt-4.1" and outcome.turns == 2
    assert outcome.input_tokens > 0 and outcome.cost_usd
