"""Model facts (window, output cap, thinking, price) from one table keyed by provider and model,
and from the `models` setting for models no table knows."""

from __future__ import annotations

import json

import pytest

from agent_tui.engine.models.base import context_window_for, output_cap_for
from agent_tui.engine.models.facts import facts_for, set_overrides
from agent_tui.engine.pricing import cost_usd, price_for
from tests.openai_loopback import OpenAILoopback, chat
from tests.test_openai_provider import KEY_ENV, cli_env, run

USAGE = {"input_tokens": 1_000_000, "output_tokens": 1_000_000, "cache_read_input_tokens": 1_000_000,
         "cache_creation_input_tokens": 0}


@pytest.fixture(autouse=True)
def _no_overrides():
    yield
    set_overrides({})


@pytest.mark.parametrize(
    ("model", "cost"),
    [("gpt-4.1", 2.00 + 8.00 + 0.50), ("gpt-4.1-mini-2025-04-14", 0.40 + 1.60 + 0.10),
     ("gpt-4o", 2.50 + 10.00 + 1.25), ("gpt-4o-mini", 0.15 + 0.60 + 0.075), ("o4-mini", 1.10 + 4.40 + 0.275)],
)
def test_common_openai_models_have_list_prices(model, cost):
    assert cost_usd(model, USAGE) == pytest.approx(cost)


def test_claude_prices_are_unchanged_and_unknown_models_have_none():
    assert price_for("claude-sonnet-4-6").input == 3.00
    assert price_for("qwen3-coder:30b") is None
    assert cost_usd("qwen3-coder:30b", USAGE) is None


def test_the_table_is_keyed_by_provider_and_the_longest_prefix_wins():
    assert facts_for("gpt-4.1-mini", "openai").context_window == 1_047_576
    assert facts_for("gpt-4o-mini").price.input == 0.15
    assert facts_for("gpt-4o", "anthropic").context_window is None
    assert (context_window_for("gpt-4o"), output_cap_for("gpt-4o")) == (128_000, 16_384)
    assert (context_window_for("claude-opus-4-1"), output_cap_for("claude-opus-4-1")) == (200_000, 32_000)


def test_settings_give_an_unknown_model_its_facts_and_report_bad_entries():
    problems = set_overrides({"my-local": {"contextWindow": 32768, "maxOutputTokens": 4096,
                                           "price": {"input": 1, "output": 2}},
                              "broken": {"contextWindow": "big"}})
    assert problems == ["models.broken: contextWindow must be a positive integer; ignored"]
    assert (context_window_for("my-local"), output_cap_for("my-local")) == (32768, 4096)
    assert cost_usd("my-local", USAGE) == pytest.approx(1 + 2 + 1)


def test_print_mode_takes_an_unknown_models_window_cap_and_price_from_settings(tmp_path):
    folder = tmp_path / ".agent-tui"
    folder.mkdir()
    with OpenAILoopback() as srv:
        (folder / "settings.json").write_text(json.dumps({
            "provider": "openai", "baseUrl": srv.url + "/v1", "apiKeyEnv": KEY_ENV, "model": "my-local",
            "models": {"my-local": {"contextWindow": 32768, "maxOutputTokens": 4096,
                                    "price": {"input": 1.0, "output": 2.0}}},
        }))
        srv.push(chat("priced", usage={"prompt_tokens": 1000, "completion_tokens": 500}))

        out = run(["-p", "hi", "--output-format", "json"], tmp_path, cli_env())

        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout)
        assert srv.requests[0].body["max_tokens"] == 4096
        assert result["total_cost_usd"] == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1_000_000)
        assert result["usage"]["input_tokens"] == 1000 and result["usage"]["output_tokens"] == 500


@pytest.mark.parametrize(("model", "thinks", "sent"), [
    ("qwen3:32b", True, {"type": "enabled", "budget_tokens": 16000}),
    ("claude-sonnet-4-6", False, None),
    ("qwen3:32b", None, None),
])
def test_the_models_setting_says_whether_a_model_thinks(api, tmp_path, model, thinks, sent):
    from tests.loopback import reply
    from tests.test_print_mode import env_for

    folder = tmp_path / ".agent-tui"
    folder.mkdir()
    facts = {"maxOutputTokens": 32000} if thinks is None else {"maxOutputTokens": 32000, "thinking": thinks}
    (folder / "settings.json").write_text(json.dumps({"model": model, "models": {model: facts}}))
    api.push(reply("ok"))

    out = run(["-p", "hi"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert api.requests[0].body.get("thinking") == sent
