"""Cost at list prices: the table, the -p JSON result's total_cost_usd, and unknown models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_tui.engine.pricing import cost_usd, format_usd, price_for, total_cost_usd
from tests.engine_helpers import make_session
from tests.loopback import reply

AGENT = str(Path(sys.executable).with_name("agent-tui"))
USAGE = {"input_tokens": 1_000, "output_tokens": 2_000,
         "cache_creation_input_tokens": 40_000, "cache_read_input_tokens": 100_000}


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        # 1k x $3 + 2k x $15 + 40k x $3.75 + 100k x $0.30, per million
        ("claude-sonnet-4-6", 0.003 + 0.030 + 0.150 + 0.030),
        ("claude-opus-4-6", 0.005 + 0.050 + 0.250 + 0.050),
        ("claude-opus-4-1-20250805", 0.015 + 0.150 + 0.750 + 0.150),
        ("claude-haiku-4-5-20251001", 0.001 + 0.010 + 0.050 + 0.010),
        ("claude-3-5-haiku-latest", 0.0008 + 0.008 + 0.040 + 0.008),
    ],
)
def test_cost_of_a_request_by_model_family(model, expected):
    assert cost_usd(model, USAGE) == pytest.approx(expected)


def test_a_model_without_a_price_has_no_cost():
    assert price_for("qwen3-coder:30b") is None
    assert cost_usd("qwen3-coder:30b", USAGE) is None
    assert total_cost_usd({"claude-sonnet-4-6": USAGE, "qwen3-coder:30b": USAGE}) is None
    assert total_cost_usd({"claude-sonnet-4-6": USAGE, "qwen3-coder:30b": {}}) == pytest.approx(0.213)


def test_dollars_are_shown_to_a_useful_precision():
    assert (format_usd(0.00421), format_usd(0.213), format_usd(1.2345)) == ("$0.0042", "$0.2130", "$1.23")


async def test_a_fallback_request_is_priced_at_its_own_model(api, tmp_path):
    from tests.loopback import status

    overloaded = status(529, "overloaded_error", "Overloaded")
    api.push(overloaded, overloaded, overloaded,
             reply("from haiku", model="claude-haiku-4-5", usage={"input_tokens": 1_000_000, "output_tokens": 0}))
    session = make_session(api.url, tmp_path, fallback_model="claude-haiku-4-5")

    await session.submit("hi")

    assert session.usage_by_model == {"claude-haiku-4-5": {"input_tokens": 1_000_000, "output_tokens": 0,
                                                           "cache_creation_input_tokens": 0,
                                                           "cache_read_input_tokens": 0}}
    assert session.cost_usd == pytest.approx(1.0)


def _print_json(api, tmp_path: Path, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key", HOME=str(tmp_path))
    out = subprocess.run([AGENT, "-p", "hi", "--output-format", "json", *args], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_print_json_carries_total_cost_usd(api, tmp_path):
    api.push(reply("priced", usage={"input_tokens": 2_000, "output_tokens": 100, "cache_read_input_tokens": 10_000}))

    result = _print_json(api, tmp_path, "--model", "claude-sonnet-4-6")

    assert result["usage"]["cache_read_input_tokens"] == 10_000
    assert result["total_cost_usd"] == pytest.approx((2_000 * 3 + 100 * 15 + 10_000 * 0.3) / 1e6)


def test_print_json_cost_is_null_for_a_model_without_a_price(api, tmp_path):
    api.push(reply("local", usage={"input_tokens": 2_000, "output_tokens": 100}))

    result = _print_json(api, tmp_path, "--model", "qwen3-coder")

    assert result["total_cost_usd"] is None
    assert result["usage"]["input_tokens"] == 2_000
