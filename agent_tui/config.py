"""Layered settings: one typed object (the contract other modules read).

Layers, lowest first: defaults < user (`<config dir>/agent-tui/settings.json`)
< Claude Code's project and local files (`.claude/settings.json`,
`.claude/settings.local.json`) < project (`.agent-tui/settings.json`) < local
(`.agent-tui/settings.local.json`) < `--settings FILE` < CLI flags <
environment (`ANTHROPIC_*`, `AGENT_TUI_*`).  Keys of Claude Code's files that
agent-tui does not use are skipped without a problem.
Keys use Claude Code's spelling in the files (`fallbackModel`, `mcpServers`);
attributes are snake_case.

Scalars are overridden by a higher layer; the permission rule lists and the
hook lists are concatenated across layers (as Claude Code does); the other
tables (`env`, `keymap`, `mcpServers`, `compaction`, `tools`, `sandbox`) merge per key.
A file that cannot be read, or a key with the wrong shape, is reported in
`Settings.problems` (path and key) and skipped; the other layers still apply.
Permission rules fail closed: a bad entry drops only itself, a file with
comments or trailing commas is read without them, and a file that is still not
JSON raises `SettingsError` (the start is refused) rather than losing its deny rules.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Re-exported: the front ends read them here.
from .modes import PERMISSION_MODES as PERMISSION_MODES
from .paths import config_dir as config_dir
from .paths import shown_path

EFFORT_LEVELS = ("low", "medium", "high", "max")
PROJECT_SETTINGS = Path(".agent-tui") / "settings.json"
LOCAL_SETTINGS = Path(".agent-tui") / "settings.local.json"
# The project's MCP servers, in Claude Code's file (engine/claude_files.py reads it; the command line
# only looks whether it is there, before the engine loads).
MCP_JSON = Path(".mcp.json")
CLAUDE_PROJECT_SETTINGS = Path(".claude") / "settings.json"
CLAUDE_LOCAL_SETTINGS = Path(".claude") / "settings.local.json"
# Claude Code's `preferredNotifChannel` values, and the two escape sequences by name.
NOTIF_CHANNELS = ("auto", "iterm2", "iterm2_with_bell", "kitty", "ghostty", "osc9", "osc777", "terminal_bell",
                  "notifications_disabled")


@dataclass
class Settings:
    model: str | None = None
    fallback_model: str | None = None
    max_turns: int | None = None
    # {"allow": [...], "deny": [...], "ask": [...], "defaultMode": str, "additionalDirectories": [...]}
    permissions: dict[str, Any] = field(default_factory=dict)
    # Claude Code's hook table: {"PreToolUse": [{"matcher": str, "hooks": [{"type": "command", ...}]}], ...}
    hooks: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    # {"auto": bool, "thresholdPercent": float, "microcompactKeep": int, ...}
    compaction: dict[str, Any] = field(default_factory=dict)
    # {"maxConcurrency": int, ...}
    tools: dict[str, Any] = field(default_factory=dict)
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    # Claude Code's `sandbox` block: {"enabled": bool, "autoAllowBashIfSandboxed": bool,
    # "excludedCommands": [...], "network": {"allowedDomains": [...]}, "filesystem": {...}, ...}
    sandbox: dict[str, Any] = field(default_factory=dict)
    context_window: int | None = None
    # The output cap sent as max_tokens (local servers often allow less than Claude).
    max_output_tokens: int | None = None
    # A server speaking the Messages API (from ANTHROPIC_BASE_URL, or `env` in a settings file).
    base_url: str | None = None
    # The protocol: "anthropic" (the Messages API), "openai" (chat completions), "bedrock", "vertex".
    provider: str | None = None
    # The name of the environment variable holding the key (never the key): OpenAI-compatible servers.
    api_key_env: str | None = None
    # Facts of models no table knows, by exact name: {"qwen3:8b": {"contextWindow": 32768,
    # "maxOutputTokens": 8192, "thinking": false, "price": {"input": 0, "output": 0}}}.
    models: dict[str, Any] = field(default_factory=dict)
    # cache_control on the static prefix and the newest message (some local servers reject it).
    prompt_caching: bool = True
    # Extended thinking: "off", "adaptive" (the model decides; where supported), or a token budget.
    thinking: str | int | None = None
    # output_config.effort where the model supports it: "low" | "medium" | "high" | "max".
    effort: str | None = None
    # Seconds a request may spend retrying (connection refused, overloaded, 5xx) before it fails.
    max_retry_seconds: float | None = None
    # Project MCP servers (`.mcp.json`) the person approved or rejected, as Claude Code records them.
    enabled_mcpjson_servers: list[str] = field(default_factory=list)
    disabled_mcpjson_servers: list[str] = field(default_factory=list)
    enable_all_project_mcp_servers: bool = False
    # How the TUI notifies when a turn ends or a permission waits while the terminal is unfocused.
    preferred_notif_channel: str = "auto"
    # Claude Code's `statusLine`: {"type": "command", "command": str, "timeout": seconds?}.
    status_line: dict[str, Any] | None = None
    # Where each key's effective value came from: {"model": "project (.agent-tui/settings.json)", ...}
    sources: dict[str, str] = field(default_factory=dict)
    # Each layer's own `permissions`, lowest first, for `PermissionPolicy.from_settings`:
    # (source "user" | "project" | "local" | "settings" | "cli", permissions, rule anchor dir, file).
    permission_layers: list[tuple[str, dict[str, Any], Path | None, Path | None]] = field(default_factory=list)
    # Problems found while loading (invalid files, bad keys), reported to the user.
    problems: list[str] = field(default_factory=list)

    def effective(self) -> list[SettingValue]:
        """Every key with its effective value and where it came from (for `/config`).

        Tables add one row per entry (`permissions.allow`, `env.FOO`, ...), each
        with its own source; keys no layer set show their default.
        """
        rows: list[SettingValue] = []
        for spec in KEYS:
            value = getattr(self, spec.attr)
            if spec.kind in ("table", "permissions", "hooks") and value:
                for sub, sub_value in value.items():
                    name = f"{spec.key}.{sub}"
                    rows.append(SettingValue(name, sub_value, self.sources.get(name, "default")))
            else:
                rows.append(SettingValue(spec.key, value, self.sources.get(spec.key, "default")))
        return rows


@dataclass(frozen=True, slots=True)
class SettingValue:
    """One row of the effective settings: file spelling, value, source label."""

    key: str
    value: Any
    source: str


def user_settings_path() -> Path:
    return config_dir() / "settings.json"


def save_user_setting(key: str, value: Any) -> Path:
    """Set `key` in the user's settings file, keeping its other keys (a file that does not parse
    is not overwritten: OSError). The file written."""
    import json

    path = user_settings_path()
    data: Any = {}
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise OSError(f"{path} is not valid JSON ({exc}); not changed") from exc
    if not isinstance(data, dict):
        raise OSError(f"{path} does not hold a JSON object; not changed")
    data[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


# ---------------------------------------------------------------- key table


class _Invalid(ValueError):
    """A value of the wrong shape; the message says what was expected."""


class SettingsError(ValueError):
    """A settings file that cannot be read as JSON at all: its permission rules cannot be
    honoured, so agent-tui does not start (fail closed).  The message names file and line."""


def _string(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Invalid(f"must be a non-empty string (got {value!r})")
    return value


def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _Invalid(f"must be a positive integer (got {value!r})")
    return value


def _string_list(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Invalid(f"must be a list of strings (got {value!r})")
    return list(value)


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Invalid(f"must be an object (got {type(value).__name__})")
    return dict(value)


def _env_table(value: Any) -> dict[str, str]:
    table = _object(value)
    out = {}
    for name, v in table.items():
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise _Invalid(f"value of {name!r} must be a string (got {v!r})")
        out[name] = str(v)
    return out


def _string_table(value: Any) -> dict[str, str]:
    table = _object(value)
    for name, v in table.items():
        if not isinstance(v, str):
            raise _Invalid(f"value of {name!r} must be a string (got {v!r})")
    return table


def _object_table(value: Any) -> dict[str, Any]:
    table = _object(value)
    for name, v in table.items():
        if not isinstance(v, dict):
            raise _Invalid(f"entry {name!r} must be an object (got {type(v).__name__})")
    return table


def _hooks(value: Any) -> dict[str, Any]:
    table = _object(value)
    for name, v in table.items():
        if not isinstance(v, list):
            raise _Invalid(f"entry {name!r} must be a list of matchers (got {type(v).__name__})")
    return table


def _mode(value: Any) -> str:
    if value not in PERMISSION_MODES:
        raise _Invalid(f"must be one of {', '.join(PERMISSION_MODES)} (got {value!r})")
    return value


def _notif_channel(value: Any) -> str:
    if value not in NOTIF_CHANNELS:
        raise _Invalid(f"must be one of {', '.join(NOTIF_CHANNELS)} (got {value!r})")
    return value


def _status_line(value: Any) -> dict[str, Any]:
    command = value.get("command") if isinstance(value, dict) else None
    if not isinstance(value, dict) or value.get("type", "command") != "command" or not isinstance(command, str) \
            or not command.strip():
        raise _Invalid(f'must be {{"type": "command", "command": "..."}} (got {value!r})')
    return dict(value)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Invalid(f"must be true or false (got {value!r})")
    return value


def _percent(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 100:
        raise _Invalid(f"must be a number above 0 and at most 100 (got {value!r})")
    return value


def _thinking(value: Any) -> str | int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if value in ("off", "adaptive"):
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1024:
        raise _Invalid(f'must be "off", "adaptive" or a token budget of at least 1024 (got {value!r})')
    return value


def _effort(value: Any) -> str:
    if value not in EFFORT_LEVELS:
        raise _Invalid(f"must be one of {', '.join(EFFORT_LEVELS)} (got {value!r})")
    return value


def _seconds(value: Any) -> float:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise _Invalid(f"must be a number of seconds above 0 (got {value!r})")
    return float(value)


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Invalid(f"must be a whole number, 0 or more (got {value!r})")
    return value


def _sub_table(entries: dict[str, Callable[[Any], Any]]) -> Callable[[Any], dict[str, Any]]:
    """A nested object whose known entries must have the right shape (unknown ones pass)."""

    def parse(value: Any) -> dict[str, Any]:
        table = _object(value)
        for name, v in table.items():
            if name in entries:
                try:
                    table[name] = entries[name](v)
                except _Invalid as exc:
                    raise _Invalid(f"entry {name!r} {exc}") from None
        return table

    return parse


# Entries of the free-form tables whose shape is known; other entries pass as they are.
_TABLE_ENTRIES: dict[str, dict[str, Callable[[Any], Any]]] = {
    "tools": {"maxConcurrency": _positive_int},
    "compaction": {"auto": _bool, "thresholdPercent": _percent, "microcompactKeep": _count},
    "sandbox": {
        "enabled": _bool,
        "autoAllowBashIfSandboxed": _bool,
        "allowUnsandboxedCommands": _bool,
        "failIfUnavailable": _bool,
        "excludedCommands": _string_list,
        "passEnv": _string_list,
        "network": _sub_table({
            "allowedDomains": _string_list,
            "allowUnixSockets": _string_list,
            "allowAllUnixSockets": _bool,
            "allowLocalBinding": _bool,
        }),
        "filesystem": _sub_table({"allowWrite": _string_list, "denyWrite": _string_list, "denyRead": _string_list}),
    },
}

_RULE_LISTS = ("allow", "deny", "ask")
_PERMISSION_KEYS: dict[str, Callable[[Any], Any]] = {
    "allow": _string_list,
    "deny": _string_list,
    "ask": _string_list,
    "additionalDirectories": _string_list,
    "defaultMode": _mode,
}


@dataclass(frozen=True, slots=True)
class _Key:
    key: str  # file spelling
    attr: str  # Settings attribute
    # "scalar": a higher layer replaces it; "table": merged per entry; "list": concatenated;
    # "permissions": rule lists concatenated, defaultMode replaced; "hooks": lists concatenated.
    kind: str
    parse: Callable[[Any], Any]


KEYS: tuple[_Key, ...] = (
    _Key("model", "model", "scalar", _string),
    _Key("fallbackModel", "fallback_model", "scalar", _string),
    _Key("maxTurns", "max_turns", "scalar", _positive_int),
    _Key("permissions", "permissions", "permissions", _object),
    _Key("hooks", "hooks", "hooks", _hooks),
    _Key("env", "env", "table", _env_table),
    _Key("theme", "theme", "scalar", _string),
    _Key("keymap", "keymap", "table", _string_table),
    _Key("compaction", "compaction", "table", _object),
    _Key("tools", "tools", "table", _object),
    _Key("mcpServers", "mcp_servers", "table", _object_table),
    _Key("sandbox", "sandbox", "table", _object),
    _Key("contextWindow", "context_window", "scalar", _positive_int),
    _Key("maxOutputTokens", "max_output_tokens", "scalar", _positive_int),
    _Key("baseUrl", "base_url", "scalar", _string),
    _Key("provider", "provider", "scalar", _string),
    _Key("apiKeyEnv", "api_key_env", "scalar", _string),
    _Key("models", "models", "table", _object_table),
    _Key("promptCaching", "prompt_caching", "scalar", _bool),
    _Key("thinking", "thinking", "scalar", _thinking),
    _Key("effort", "effort", "scalar", _effort),
    _Key("maxRetrySeconds", "max_retry_seconds", "scalar", _seconds),
    _Key("enabledMcpjsonServers", "enabled_mcpjson_servers", "list", _string_list),
    _Key("disabledMcpjsonServers", "disabled_mcpjson_servers", "list", _string_list),
    _Key("enableAllProjectMcpServers", "enable_all_project_mcp_servers", "scalar", _bool),
    _Key("preferredNotifChannel", "preferred_notif_channel", "scalar", _notif_channel),
    _Key("statusLine", "status_line", "scalar", _status_line),
)
_BY_KEY = {k.key: k for k in KEYS}
# Keys a file may carry that mean nothing here (editor schema hints).
_IGNORED_KEYS = frozenset({"$schema"})

# Environment variables, lowest first: a later one overrides an earlier one for the same key.
ENV_VARS: tuple[tuple[str, str], ...] = (
    ("ANTHROPIC_MODEL", "model"),
    ("AGENT_TUI_MODEL", "model"),
    ("AGENT_TUI_FALLBACK_MODEL", "fallbackModel"),
    ("AGENT_TUI_MAX_TURNS", "maxTurns"),
    ("AGENT_TUI_THEME", "theme"),
    ("AGENT_TUI_CONTEXT_WINDOW", "contextWindow"),
    ("AGENT_TUI_MAX_OUTPUT_TOKENS", "maxOutputTokens"),
    ("ANTHROPIC_BASE_URL", "baseUrl"),
    ("AGENT_TUI_PROVIDER", "provider"),
    ("AGENT_TUI_THINKING", "thinking"),
    ("AGENT_TUI_EFFORT", "effort"),
    ("AGENT_TUI_MAX_RETRY_SECONDS", "maxRetrySeconds"),
    ("AGENT_TUI_PERMISSION_MODE", "permissions.defaultMode"),
)


# ---------------------------------------------------------------- loading


def load_settings(
    cwd: Path,
    *,
    settings_file: str | Path | None = None,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    sources: Collection[str] | None = None,
) -> Settings:
    """Build the effective settings for a session started in `cwd`.

    `sources` (`--setting-sources user,project,local`) names the file layers read; None: all.

    `settings_file` is `--settings` (a path, or a JSON object as text);
    `flags` holds the CLI flags in file spelling (`{"model": ..., "permissions":
    {"allow": [...]}}`); `environ` defaults to `os.environ`.  Environment
    variables listed in a file's `env` table count as environment, below the
    real environment.
    """
    cwd = Path(cwd)
    environ = os.environ if environ is None else environ
    settings = Settings()
    user_path = user_settings_path()
    # (source, label, keys, file, folder that anchors its `/pattern` permission rules)
    layers: list[tuple[str, str, dict[str, Any], Path | None, Path | None]] = []
    for source, label, path, anchor in (
        ("user", f"user ({shown_path(user_path)})", user_path, user_path.parent),
        ("claude-project", f"Claude Code project ({CLAUDE_PROJECT_SETTINGS})", cwd / CLAUDE_PROJECT_SETTINGS, cwd),
        ("claude-local", f"Claude Code local ({CLAUDE_LOCAL_SETTINGS})", cwd / CLAUDE_LOCAL_SETTINGS, cwd),
        ("project", f"project ({PROJECT_SETTINGS})", cwd / PROJECT_SETTINGS, cwd),
        ("local", f"local ({LOCAL_SETTINGS})", cwd / LOCAL_SETTINGS, cwd),
    ):
        if sources is not None and source.removeprefix("claude-") not in sources:
            continue
        data = _read_file(path, settings.problems, missing_ok=True)
        if data is not None:
            foreign = source.startswith("claude-")
            validated = _validated(data, str(shown_path(path)), settings.problems, foreign=foreign)
            layers.append((source, label, validated, path, anchor))
    if settings_file is not None:
        text = str(settings_file)
        file: Path | None = None
        if text.lstrip().startswith("{"):
            data = _parse_json(text, "--settings", settings.problems)
            label = "--settings (inline JSON)"
        else:
            file = Path(text).expanduser()
            if not file.is_absolute():
                file = cwd / file
            data = _read_file(file, settings.problems, missing_ok=False)
            label = f"--settings ({shown_path(file)})"
        if data is not None:
            anchor = file.parent if file is not None else None
            layers.append(("settings", label, _validated(data, label, settings.problems), file, anchor))
    if flags:
        layers.append(("cli", "CLI flags", _validated(dict(flags), "CLI flags", settings.problems), None, None))
    for source, label, data, path, anchor in layers:
        _apply(settings, data, label)
        if data.get("permissions"):
            settings.permission_layers.append((source, data["permissions"], anchor, path))
    _apply_environment(settings, environ)
    return settings


def _read_file(path: Path, problems: list[str], *, missing_ok: bool) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if not missing_ok:
            problems.append(f"{shown_path(path)}: settings file not found")
        return None
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{shown_path(path)}: cannot read settings: {exc}")
        return None
    if not text.strip():
        return None
    return _parse_json(text, shown_path(path), problems)


# JSONC, as editors write settings: comments, and a comma before a closing bracket.  Strings
# match first so that nothing inside one is touched.  (Compiled on first use, by `re`'s cache:
# most starts read no file that needs them.)
_COMMENTS = r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/'
_TRAILING_COMMAS = r'("(?:\\.|[^"\\])*")|,(\s*[}\]])'


def _relaxed(text: str) -> str:
    """`text` without comments and trailing commas."""
    text = re.sub(_COMMENTS, lambda m: m.group(1) or "", text, flags=re.S)
    return re.sub(_TRAILING_COMMAS, lambda m: m.group(1) or m.group(2), text)


def _parse_json(text: str, where: str, problems: list[str]) -> dict[str, Any] | None:
    import json  # only when a settings file exists: not on a bare start's path

    try:
        data = json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        at = f" (line {line}, column {exc.colno})" if line is not None else ""  # type: ignore[attr-defined]
        msg = getattr(exc, "msg", str(exc))
        try:
            data = json.loads(_relaxed(text))
        except ValueError:
            # Dropping the file would drop its deny rules: refuse to start instead.
            raise SettingsError(
                f"{where}: not valid JSON{at}: {msg}. agent-tui does not start without it, since its "
                "permission rules could not be applied; fix the file or remove it."
            ) from exc
        problems.append(f"{where}: not valid JSON{at}: {msg}; read anyway without its comments and trailing commas")
    if not isinstance(data, dict):
        kind = type(data).__name__
        problems.append(f"{where}: settings must be a JSON object (got {kind}); the file is ignored")
        return None
    return data


def _validated(data: dict[str, Any], where: str, problems: list[str], *, foreign: bool = False) -> dict[str, Any]:
    """The keys of one layer that have the right shape; each bad key is one problem.
    `foreign`: a Claude Code file, whose keys agent-tui does not use are not problems."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in _IGNORED_KEYS:
            continue
        spec = _BY_KEY.get(key)
        if spec is None:
            if not foreign:
                problems.append(f"{where}: unknown key {key!r}, ignored")
            continue
        try:
            parsed = spec.parse(value)
        except _Invalid as exc:
            problems.append(f"{where}: key {key!r} {exc}; ignored")
            continue
        if spec.kind == "permissions":
            parsed = _validated_permissions(parsed, where, problems, foreign=foreign)
        elif key in _TABLE_ENTRIES:
            parsed = _validated_entries(key, parsed, where, problems)
        out[key] = parsed
    return out


def _validated_permissions(
    table: dict[str, Any], where: str, problems: list[str], *, foreign: bool = False
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for sub, value in table.items():
        parse = _PERMISSION_KEYS.get(sub)
        if parse is None:
            if not foreign:
                problems.append(f"{where}: unknown key 'permissions.{sub}', ignored")
            continue
        if sub in _RULE_LISTS and isinstance(value, list):
            # A bad entry drops only itself: the rest of a deny list stays in force.
            out[sub] = [rule for rule in value if isinstance(rule, str)]
            for i, rule in enumerate(value):
                if not isinstance(rule, str):
                    problems.append(f"{where}: permissions.{sub}[{i}] must be a rule string (got {rule!r}); ignored")
            continue
        try:
            out[sub] = parse(value)
        except _Invalid as exc:
            problems.append(f"{where}: key 'permissions.{sub}' {exc}; ignored")
    return out


def _validated_entries(key: str, table: dict[str, Any], where: str, problems: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for sub, value in table.items():
        parse = _TABLE_ENTRIES[key].get(sub)
        try:
            out[sub] = parse(value) if parse is not None else value
        except _Invalid as exc:
            problems.append(f"{where}: key '{key}.{sub}' {exc}; ignored")
    return out


def _apply(settings: Settings, data: dict[str, Any], label: str) -> None:
    sources = settings.sources
    for key, value in data.items():
        spec = _BY_KEY[key]
        current = getattr(settings, spec.attr)
        if spec.kind == "scalar":
            setattr(settings, spec.attr, value)
            sources[key] = label
            continue
        if spec.kind == "list":
            setattr(settings, spec.attr, _union(current, value))
            sources[key] = _join_sources(sources.get(key), label)
            continue
        merged = dict(current)
        for sub, sub_value in value.items():
            name = f"{key}.{sub}"
            concatenate = (spec.kind == "hooks") or (spec.kind == "permissions" and sub != "defaultMode")
            if concatenate and sub in merged:
                merged[sub] = _union(merged[sub], sub_value)
                sources[name] = f"{sources[name]} + {label}"
            else:
                merged[sub] = list(sub_value) if isinstance(sub_value, list) else sub_value
                sources[name] = label
        setattr(settings, spec.attr, merged)
        sources[key] = _join_sources(sources.get(key), label)


def _union(old: list[Any], new: list[Any]) -> list[Any]:
    out = list(old)
    for item in new:
        if item not in out:
            out.append(item)
    return out


def _join_sources(old: str | None, label: str) -> str:
    if not old:
        return label
    parts = old.split(" + ")
    return old if label in parts else f"{old} + {label}"


def _apply_environment(settings: Settings, environ: Mapping[str, str]) -> None:
    """The top layer: real environment variables, then those a file's `env` table sets."""
    for var, key in ENV_VARS:
        if environ.get(var):
            value, label = environ[var], f"environment ({var})"
        elif settings.env.get(var):
            origin = settings.sources[f"env.{var}"]
            value, label = settings.env[var], f"environment ({var}, from the env table of {origin})"
        else:
            continue
        spec_key, _, sub = key.partition(".")
        spec = _BY_KEY[spec_key]
        try:
            if sub:
                parsed = _PERMISSION_KEYS[sub](value)
            else:
                parsed = spec.parse(_coerce(spec, value))
        except _Invalid as exc:
            settings.problems.append(f"environment variable {var} {exc}; ignored")
            continue
        if sub:
            table = dict(getattr(settings, spec.attr))
            table[sub] = parsed
            setattr(settings, spec.attr, table)
            settings.sources[key] = label
            settings.sources[spec_key] = _join_sources(settings.sources.get(spec_key), label)
        else:
            setattr(settings, spec.attr, parsed)
            settings.sources[key] = label


def _coerce(spec: _Key, value: str) -> Any:
    if spec.parse is _positive_int:
        try:
            return int(value)
        except ValueError:
            return value
    return value


def apply_env(settings: Settings, environ: MutableMapping[str, str] | None = None) -> None:
    """Export the `env` table into the process environment (the real environment wins),
    so the SDK and every tool's subprocess see it."""
    target = os.environ if environ is None else environ
    for name, value in settings.env.items():
        target.setdefault(name, value)
