"""Layered settings: precedence across every layer, merging, sources, invalid files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_tui.config import Settings, SettingsError, load_settings

# Lowest first, as config.py states them.
LAYERS = ("user", "project", "local", "settings_file", "flags", "environment")


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    config = tmp_path / "config"
    monkeypatch.setenv("AGENT_TUI_CONFIG_DIR", str(config))
    project = tmp_path / "project"
    project.mkdir()
    return config, project, tmp_path / "extra-settings.json"


def load(dirs, layers: dict[str, Any], environ: dict[str, str] | None = None) -> Settings:
    """Settings with `layers[name]` written to each file layer (flags passed as a dict)."""
    config, project, extra = dirs
    if "user" in layers:
        write(config / "settings.json", layers["user"])
    if "project" in layers:
        write(project / ".agent-tui" / "settings.json", layers["project"])
    if "local" in layers:
        write(project / ".agent-tui" / "settings.local.json", layers["local"])
    if "settings_file" in layers:
        write(extra, layers["settings_file"])
    return load_settings(
        project,
        settings_file=extra if "settings_file" in layers else None,
        flags=layers.get("flags"),
        environ=environ or {},
    )


def source_label(layer: str, var: str) -> str:
    return {
        "user": "user (",
        "project": "project (.agent-tui/settings.json)",
        "local": "local (.agent-tui/settings.local.json)",
        "settings_file": "--settings (",
        "flags": "CLI flags",
        "environment": f"environment ({var})",
    }[layer]


# key, environment variable, value for layer i, parsed value for layer i
SCALARS = [
    ("model", "ANTHROPIC_MODEL", lambda i: f"model-{i}", lambda i: f"model-{i}"),
    ("fallbackModel", "AGENT_TUI_FALLBACK_MODEL", lambda i: f"fallback-{i}", lambda i: f"fallback-{i}"),
    ("maxTurns", "AGENT_TUI_MAX_TURNS", lambda i: i + 1, lambda i: i + 1),
    ("theme", "AGENT_TUI_THEME", lambda i: f"theme-{i}", lambda i: f"theme-{i}"),
    ("contextWindow", "AGENT_TUI_CONTEXT_WINDOW", lambda i: 1000 * (i + 1), lambda i: 1000 * (i + 1)),
    ("maxOutputTokens", "AGENT_TUI_MAX_OUTPUT_TOKENS", lambda i: 100 * (i + 1), lambda i: 100 * (i + 1)),
    ("baseUrl", "ANTHROPIC_BASE_URL", lambda i: f"http://host-{i}", lambda i: f"http://host-{i}"),
]
ATTRS = {"model": "model", "fallbackModel": "fallback_model", "maxTurns": "max_turns", "theme": "theme",
         "contextWindow": "context_window", "maxOutputTokens": "max_output_tokens", "baseUrl": "base_url"}


@pytest.mark.parametrize("top", range(len(LAYERS) + 1), ids=["defaults", *LAYERS])
@pytest.mark.parametrize("key,var,value,parsed", SCALARS, ids=[s[0] for s in SCALARS])
def test_highest_layer_that_sets_a_key_wins(dirs, key, var, value, parsed, top):
    """Every layer up to `top` sets the key; the value and its source are the top layer's."""
    layers: dict[str, Any] = {}
    environ: dict[str, str] = {}
    for i, layer in enumerate(LAYERS[:top]):
        if layer == "environment":
            environ[var] = str(value(i))
        else:
            layers[layer] = {key: value(i)}

    settings = load(dirs, layers, environ)

    assert settings.problems == []
    if top == 0:
        assert getattr(settings, ATTRS[key]) is None and key not in settings.sources
    else:
        assert getattr(settings, ATTRS[key]) == parsed(top - 1)
        assert settings.sources[key].startswith(source_label(LAYERS[top - 1], var))


@pytest.mark.parametrize("top", range(1, len(LAYERS) + 1), ids=LAYERS)
def test_permission_mode_follows_the_same_precedence(dirs, top):
    modes = ["plan", "acceptEdits", "dontAsk", "bypassPermissions", "plan", "acceptEdits"]
    layers: dict[str, Any] = {}
    environ: dict[str, str] = {}
    for i, layer in enumerate(LAYERS[:top]):
        if layer == "environment":
            environ["AGENT_TUI_PERMISSION_MODE"] = modes[i]
        else:
            layers[layer] = {"permissions": {"defaultMode": modes[i]}}

    settings = load(dirs, layers, environ)

    assert settings.permissions["defaultMode"] == modes[top - 1]
    assert settings.sources["permissions.defaultMode"].startswith(
        source_label(LAYERS[top - 1], "AGENT_TUI_PERMISSION_MODE"))


def test_permission_rules_and_hooks_are_concatenated_across_layers(dirs):
    hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}
    settings = load(dirs, {
        "user": {"permissions": {"allow": ["Read"], "deny": ["Bash(rm:*)"]}, "hooks": {"PreToolUse": [hook]}},
        "project": {"permissions": {"allow": ["Bash(git log:*)"]}},
        "local": {"permissions": {"allow": ["Read", "Edit"]}, "hooks": {"PreToolUse": [dict(hook, matcher="Edit")]}},
        "settings_file": {"permissions": {"ask": ["Write"]}},
        "flags": {"permissions": {"allow": ["Glob"], "deny": ["WebFetch"]}},
    })

    assert settings.permissions["allow"] == ["Read", "Bash(git log:*)", "Edit", "Glob"]
    assert settings.permissions["deny"] == ["Bash(rm:*)", "WebFetch"]
    assert settings.permissions["ask"] == ["Write"]
    assert [h["matcher"] for h in settings.hooks["PreToolUse"]] == ["Bash", "Edit"]
    allow_source = settings.sources["permissions.allow"]
    assert allow_source.startswith("user (") and allow_source.endswith(
        " + project (.agent-tui/settings.json) + local (.agent-tui/settings.local.json) + CLI flags")


def test_tables_merge_per_entry(dirs):
    settings = load(dirs, {
        "user": {"env": {"A": "user", "B": "user"}, "keymap": {"quit": "ctrl+q"},
                 "mcpServers": {"files": {"command": "files-server"}}},
        "project": {"env": {"B": "project"}, "mcpServers": {"db": {"url": "http://db"}}},
        "local": {"keymap": {"quit": "ctrl+x"}, "tools": {"maxConcurrency": 4}},
        "settings_file": {"compaction": {"auto": False}},
    })

    assert settings.env == {"A": "user", "B": "project"}
    assert settings.sources["env.A"].startswith("user (")
    assert settings.sources["env.B"] == "project (.agent-tui/settings.json)"
    assert settings.keymap == {"quit": "ctrl+x"}
    assert set(settings.mcp_servers) == {"files", "db"}
    assert settings.tools == {"maxConcurrency": 4}
    assert settings.compaction == {"auto": False}


def test_env_table_counts_as_environment_below_the_real_one(dirs):
    layers = {"project": {"env": {"ANTHROPIC_MODEL": "from-env-table", "ANTHROPIC_BASE_URL": "http://local:8080"}},
              "flags": {"model": "from-flag"}}

    from_table = load(dirs, layers)
    from_real = load(dirs, layers, {"ANTHROPIC_MODEL": "from-real-env"})

    assert from_table.model == "from-env-table"
    assert from_table.sources["model"] == (
        "environment (ANTHROPIC_MODEL, from the env table of project (.agent-tui/settings.json))")
    assert from_table.base_url == "http://local:8080"
    assert from_real.model == "from-real-env"


def test_agent_tui_variable_beats_anthropic_variable(dirs):
    settings = load(dirs, {}, {"ANTHROPIC_MODEL": "generic", "AGENT_TUI_MODEL": "specific"})

    assert settings.model == "specific"
    assert settings.sources["model"] == "environment (AGENT_TUI_MODEL)"


def test_settings_flag_accepts_inline_json(dirs):
    _config, project, _extra = dirs

    settings = load_settings(project, settings_file='{"model": "inline"}', environ={})

    assert settings.model == "inline" and settings.sources["model"] == "--settings (inline JSON)"


def test_effective_rows_list_every_key_with_value_and_source(dirs):
    settings = load(dirs, {"project": {"model": "m", "permissions": {"allow": ["Read"]}}})

    rows = {r.key: r for r in settings.effective()}

    assert rows["model"].value == "m" and rows["model"].source == "project (.agent-tui/settings.json)"
    assert rows["permissions.allow"].value == ["Read"]
    assert rows["maxTurns"].value is None and rows["maxTurns"].source == "default"
    assert {"fallbackModel", "hooks", "env", "theme", "keymap", "compaction", "tools", "mcpServers",
            "contextWindow"} <= set(rows)


# ---------------------------------------------------------------- invalid input


def test_a_file_that_is_not_json_at_all_stops_the_start_naming_file_and_line(dirs):
    _config, project, _extra = dirs
    with pytest.raises(SettingsError) as caught:
        load(dirs, {
            "user": {"model": "user-model", "maxTurns": 7},
            "project": '{"model": "broken",\n  "maxTurns": }',
        })

    assert str(caught.value).startswith(f"{project / '.agent-tui' / 'settings.json'}: not valid JSON (line 2, column 15)")
    assert "permission rules could not be applied" in str(caught.value)


def test_a_trailing_comma_or_a_comment_is_reported_and_the_file_still_applies(dirs):
    _config, project, _extra = dirs
    settings = load(dirs, {
        "project": '{\n  // the team rules\n  "permissions": {"deny": ["Bash(git push:*)", "Read(.env)",]},\n'
                   '  "model": "team-model",\n}',
    })

    assert settings.permissions["deny"] == ["Bash(git push:*)", "Read(.env)"]
    assert settings.model == "team-model"
    [problem] = settings.problems
    assert problem.startswith(f"{project / '.agent-tui' / 'settings.json'}: not valid JSON (line 2")
    assert problem.endswith("read anyway without its comments and trailing commas")


def test_a_malformed_rule_entry_drops_only_itself(dirs):
    _config, project, _extra = dirs
    settings = load(dirs, {"project": {"permissions": {"deny": ["Bash(rm:*)", {"tool": "Bash"}, 42, "Read(.env)"]}}})

    assert settings.permissions["deny"] == ["Bash(rm:*)", "Read(.env)"]
    assert [p.split(": ", 1)[1] for p in settings.problems] == [
        "permissions.deny[1] must be a rule string (got {'tool': 'Bash'}); ignored",
        "permissions.deny[2] must be a rule string (got 42); ignored",
    ]


def test_a_key_with_the_wrong_shape_is_reported_and_the_rest_of_the_file_applies(dirs):
    _config, project, _extra = dirs
    settings = load(dirs, {"project": {
        "model": "good-model",
        "maxTurns": "ten",
        "permissions": {"allow": "Read", "deny": ["Bash"], "defaultMode": "yolo"},
        "env": {"OK": "1", "BAD": {"nested": True}},
        "tools": {"maxConcurrency": 0},
    }})

    path = str(project / ".agent-tui" / "settings.json")
    assert all(p.startswith(path) for p in settings.problems)
    text = "\n".join(settings.problems)
    for key in ("'maxTurns'", "'permissions.allow'", "'permissions.defaultMode'", "'env'", "'tools.maxConcurrency'"):
        assert key in text
    assert settings.model == "good-model" and settings.max_turns is None
    assert settings.permissions == {"deny": ["Bash"]}
    assert settings.tools == {}


def test_unknown_keys_are_reported(dirs):
    settings = load(dirs, {"local": {"$schema": "https://example.com/schema.json", "modle": "typo"}})

    [problem] = settings.problems
    assert "settings.local.json" in problem and "'modle'" in problem


def test_top_level_must_be_an_object(dirs):
    settings = load(dirs, {"user": ["model", "x"]})

    assert "must be a JSON object" in settings.problems[0]


def test_missing_settings_file_and_bad_environment_values_are_reported(dirs):
    _config, project, _extra = dirs

    settings = load_settings(project, settings_file="nope.json", environ={"AGENT_TUI_MAX_TURNS": "many"})

    assert any("nope.json" in p and "not found" in p for p in settings.problems)
    assert any("AGENT_TUI_MAX_TURNS" in p for p in settings.problems)
    assert settings.max_turns is None


def test_the_policy_keeps_each_rule_with_its_layer_and_takes_the_effective_mode(dirs):
    from agent_tui.cli import make_policy

    _config, project, _extra = dirs
    settings = load(
        dirs,
        {"user": {"permissions": {"deny": ["Bash(rm:*)"]}},
         "project": {"permissions": {"allow": ["Bash(git log:*)"], "defaultMode": "plan"}},
         "local": {"permissions": {"allow": ["Edit"]}},
         "flags": {"permissions": {"allow": ["Glob"], "defaultMode": "acceptEdits"}}},
        {"AGENT_TUI_PERMISSION_MODE": "dontAsk"},
    )

    policy = make_policy(settings, project, interactive=False)

    by_source = {source: [e.rule for e in entries] for source, entries in policy.entries_by_source().items()}
    assert by_source == {"user": ["Bash(rm:*)"], "project": ["Bash(git log:*)"], "local": ["Edit"], "cli": ["Glob"]}
    assert policy.mode == "dontAsk"
    assert policy.local_settings_path == project / ".agent-tui" / "settings.local.json"
