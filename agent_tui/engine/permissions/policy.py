"""Permission decisions: what the executor asks before every tool call (docs/architecture.md §6).

Each call goes through, in order, and the first step that decides wins:

1. deny rules (any source); for Bash also Read/Edit deny rules on the paths
   its words name (a word only known when it runs, or a recursive search of a
   folder holding a denied file, asks as a danger);
2. plan mode: a tool that is not read-only is denied, and the model is told why
   (WebFetch changes nothing here: it asks as in the other modes);
3. dangerous forms (`shell/danger.py`: rm of a root, `curl | sh`, writes
   to shell startup files or .git internals, sudo, …) ask, with the reason;
4. ask rules;
5. bypassPermissions allows;
6. allow rules (for Bash every simple command must be allowed by a rule or be
   read-only, and `Read(…)` rules cover what read-only commands read; a
   prefix rule never covers a `cd` or an output redirection);
7. read-only calls inside the working directories (cwd + additional
   directories) are allowed; outside them they ask;
8. acceptEdits allows file edits inside the working directories; outside
   them it asks; and a Bash command the sandbox will contain, whose paths are
   all inside them (`sandbox.autoAllowBashIfSandboxed`, tools/sandbox.py);
9. everything else asks.

"ask" becomes a deny in dontAsk mode and when nobody can answer (print mode).
Paths are resolved through symlinks and `..` before any rule or directory
check.  Dangerous forms ask even in bypassPermissions (Claude Code keeps such
safety checks "bypass-immune" too): bypass skips the routine prompts, not the
ones that guard against irreversible damage; a deny rule still denies them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ...hidden_text import has_hidden
from ...modes import PERMISSION_MODES
from ...paths import own_dirs
from ...shell.classify import attached_values, foreign_repository, is_read_only_part, parts_pass, read_paths, runs_git
from ...shell.danger import danger_reason, sensitive_write_reason
from ...shell.parse import BENIGN_WRAPPERS, CommandPart, ParsedCommand, parse_command, unwrap
from ...shell.paths import resolve_paths, static
from ...tools.ask_user import NO_ONE_TO_ASK
from ...tools.base import Tool
from ...tools.sandbox import stays_inside
from ..hooks import HookOutcome, hook_label
from .rules import (
    PATH_TOOLS,
    SAFE_ENV_VARS,
    PathPattern,
    PathTarget,
    Rule,
    WorkingDirs,
    bash_matches,
    fallback_forms,
    generic_matches,
    path_pattern,
    path_target,
    rule_forms,
    split_rules,
    suggest_bash,
    suggest_for_path,
)

MODES = PERMISSION_MODES  # one list (modes.py): the settings check it too
# Shift+Tab cycles through these (bypass and dontAsk are chosen explicitly).
CYCLE = ("default", "acceptEdits", "plan")
BEHAVIORS = ("deny", "ask", "allow")
# Tools that change only the session's own state (the plan list): no prompt, even in plan mode.
NO_PERMISSION_TOOLS = frozenset({"TodoWrite", "KillShell"})
# Tools that change nothing here yet ask (a fetch goes out to the web): plan mode asks for them as
# the other modes do, rather than refusing them as changes.
PLAN_ASKS_TOOLS = frozenset({"WebFetch"})


@dataclass(frozen=True, slots=True)
class Decision:
    # "allow" | "deny" | "ask"
    behavior: str
    message: str = ""
    # Why a person must look even where a rule or the mode would allow (shown in the prompt).
    danger: str | None = None
    # What `a` (yes, don't ask again) records: one rule or several, comma-separated; None: not offered.
    suggested_rule: str | None = None
    # The rule(s) that decided, comma-separated.
    rule: str | None = None
    # "rule" | "mode" | "read_only" | "no_permission" | "plan" | "danger" | "ask_rule" | "outside" |
    # "sandbox" | "default" | "non_interactive" | "dont_ask"
    reason: str = ""
    # A file tool's path as the decision saw it (symlinks and `..` followed): where the tool may write.
    resolved: str | None = None


@dataclass(frozen=True, slots=True)
class PermissionAnswer:
    """A person's answer to a permission request (what the Future resolves to)."""

    # "allow" | "deny"
    behavior: str
    remember: bool = False
    feedback: str | None = None
    # A program's answer (the Agent SDK's `can_use_tool`): a deny's message is the tool_result the
    # model reads; an allow may run the tool on a rewritten input.
    message: str | None = None
    updated_input: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class RuleEntry:
    """One active rule, where it came from, and (for settings files) where it is stored."""

    # "allow" | "deny" | "ask"
    behavior: str
    rule: str
    # "user" | "project" | "local" | "settings" (--settings FILE) | "cli" | "session"
    source: str
    # The settings file holding it; None for flags and this session's rules.
    path: Path | None = None
    # Where `/pattern` path rules are anchored; None: the working directory.
    base_dir: Path | None = None


class SettingsLayer(NamedTuple):
    source: str
    # The layer's `permissions` object: allow / deny / ask / defaultMode / additionalDirectories.
    permissions: Mapping[str, Any]
    # Anchors `/pattern` rules and relative additionalDirectories; None: the working directory.
    base_dir: Path | None = None
    # The settings file, so a rule can be removed from it; None for flags.
    path: Path | None = None


class ReadDenyRules:
    """Read deny rules over the absolute, resolved paths a search finds (`tools.base.ReadDenyCheck`).

    Every rule is joined into one regex, one match per path; `may_cover` first passes over a whole
    block of a walk's output with substring tests, as a covered path lies in the rule's folder and
    holds its pattern's literal run (docs/architecture.md §4).
    """

    def __init__(self, patterns: list[PathPattern]) -> None:
        self._hints = [(pattern.root.rstrip(os.sep) + os.sep, pattern.literal) for pattern in patterns]
        if os.sep == "/":
            self._covered = re.compile("|".join(f"(?:{pattern.file_regex()})" for pattern in patterns)).fullmatch
        else:
            self._patterns = patterns

    def __call__(self, path: str) -> bool:
        if os.sep == "/":
            return self._covered(path) is not None
        return any((path.startswith(root) or path == pattern.root) and pattern.matches(path, False)
                   for pattern, (root, _) in zip(self._patterns, self._hints, strict=True))

    def may_cover(self, root: str, names: str) -> bool:
        lines = "\n" + names
        for folder, literal in self._hints:
            if root.startswith(folder):  # the walk is in the rule's folder: the literal must show
                head = root[len(folder):]
                if literal in head or literal in names or any(
                        head.endswith(literal[:k]) and "\n" + literal[k:] in lines for k in range(1, len(literal))):
                    return True
            elif folder.startswith(root):  # the rule's folder is in the walk: a name must lead there
                if "\n" + folder[len(root):].rstrip(os.sep) in lines:
                    return True
        return False


class PermissionPolicy:
    """Decides allow / deny / ask for each tool call, and keeps the rules by source.

    `interactive=False` (print mode) turns every "ask" into a deny, which the
    caller reports in `permission_denials`.  Rules passed to the constructor
    are recorded with source "cli".
    """

    def __init__(
        self,
        mode: str = "default",
        allow: Iterable[str] = (),
        deny: Iterable[str] = (),
        ask: Iterable[str] = (),
        interactive: bool = True,
        local_settings_path: Path | None = None,
        *,
        cwd: Path | None = None,
        additional_dirs: Iterable[Path | str] = (),
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown permission mode {mode!r}; one of: {', '.join(MODES)}")
        self.mode = mode
        self.interactive = interactive
        # Where "yes, don't ask again" rules are written (None: this session only).
        self.local_settings_path = local_settings_path
        self.cwd = Path(cwd).resolve() if cwd is not None else None
        self.additional_dirs: list[Path] = []
        # Problems found in the rules and settings given (malformed rules, unknown modes).
        self.problems: list[str] = []
        self._entries: list[tuple[RuleEntry, Rule]] = []
        for directory in additional_dirs:
            self.add_directory(directory)
        for behavior, rules in (("allow", allow), ("deny", deny), ("ask", ask)):
            for rule in rules:
                self._add(RuleEntry(behavior, rule, "cli"))

    @classmethod
    def from_settings(
        cls,
        layers: Iterable[SettingsLayer | tuple[Any, ...]],
        *,
        mode: str | None = None,
        cwd: Path,
        additional_dirs: Iterable[Path | str] = (),
        interactive: bool = True,
        local_settings_path: Path | None = None,
    ) -> PermissionPolicy:
        """A policy from settings layers, lowest precedence first (user, project, local, settings, cli).

        `mode` (the --permission-mode flag) wins over the layers' `defaultMode`,
        and the last layer that sets a valid one wins over earlier ones.
        `local_settings_path` defaults to the "local" layer's file, else
        `<cwd>/.agent-tui/settings.local.json`.  Malformed entries are skipped
        and described in `problems`.
        """
        cwd = Path(cwd).resolve()
        layers = [SettingsLayer(*layer) for layer in layers]
        local = next((layer.path for layer in layers if layer.source == "local" and layer.path), None)
        policy = cls(
            interactive=interactive,
            local_settings_path=local_settings_path or local or cwd / ".agent-tui" / "settings.local.json",
            cwd=cwd,
            additional_dirs=additional_dirs,
        )
        chosen = None
        for layer in layers:
            perms = layer.permissions or {}
            where = f"{layer.source}{f' ({layer.path})' if layer.path else ''}"
            if not isinstance(perms, Mapping):
                policy.problems.append(f"{where}: permissions must be an object")
                continue
            for behavior in ("allow", "deny", "ask"):
                rules = perms.get(behavior, [])
                if not isinstance(rules, list):
                    policy.problems.append(f"{where}: permissions.{behavior} must be a list of rules")
                    continue
                for rule in rules:
                    policy._add(RuleEntry(behavior, rule, layer.source, layer.path, layer.base_dir), where)
            default_mode = perms.get("defaultMode")
            if default_mode is not None:
                if default_mode in MODES:
                    chosen = default_mode
                else:
                    policy.problems.append(f"{where}: unknown defaultMode {default_mode!r}")
            extra = perms.get("additionalDirectories", [])
            if not isinstance(extra, list) or not all(isinstance(d, str) for d in extra):
                policy.problems.append(f"{where}: permissions.additionalDirectories must be a list of paths")
                continue
            for directory in extra:
                base = layer.base_dir or cwd
                policy.add_directory(Path(base) / Path(directory).expanduser())
        policy.mode = mode or chosen or "default"
        if policy.mode not in MODES:
            raise ValueError(f"unknown permission mode {policy.mode!r}; one of: {', '.join(MODES)}")
        return policy

    # ------------------------------------------------------------ rules, for /permissions

    @property
    def allow(self) -> list[str]:
        return [e.rule for e in self.entries("allow")]

    @property
    def deny(self) -> list[str]:
        return [e.rule for e in self.entries("deny")]

    @property
    def ask(self) -> list[str]:
        return [e.rule for e in self.entries("ask")]

    def entries(self, behavior: str | None = None) -> list[RuleEntry]:
        """The active rules (of one behavior, or all), in the order they are checked within a behavior."""
        return [entry for entry, _ in self._entries if behavior is None or entry.behavior == behavior]

    def entries_by_source(self) -> dict[str, list[RuleEntry]]:
        """The active rules grouped by source, sources in the order they were added."""
        grouped: dict[str, list[RuleEntry]] = {}
        for entry, _ in self._entries:
            grouped.setdefault(entry.source, []).append(entry)
        return grouped

    def add_rule(self, rule: str, behavior: str = "allow", *, source: str = "session") -> RuleEntry:
        """Add a rule for this session (not written anywhere).  ValueError when malformed."""
        if behavior not in BEHAVIORS:
            raise ValueError(f"unknown behavior {behavior!r}; one of: {', '.join(BEHAVIORS)}")
        parsed = Rule.parse(rule)
        entry = RuleEntry(behavior, parsed.text, source)
        self._entries.append((entry, parsed))
        return entry

    def remove_rule(self, entry: RuleEntry) -> None:
        """Stop applying `entry`; a rule from a settings file is also deleted from that file.

        KeyError when the rule is not active; OSError / ValueError when its file
        cannot be rewritten (the rule stays active then).
        """
        index = next((i for i, (e, _) in enumerate(self._entries) if e == entry), None)
        if index is None:
            raise KeyError(f"no active {entry.behavior} rule {entry.rule!r} from {entry.source}")
        if entry.path is not None and entry.path.exists():
            data = json.loads(entry.path.read_text())
            rules = data.get("permissions", {}).get(entry.behavior, [])
            if isinstance(rules, list):
                match = next((r for r in rules if isinstance(r, str) and r.strip() == entry.rule), None)
                if match is not None:
                    rules.remove(match)
                    _write_json(entry.path, data)
        del self._entries[index]

    def remember(self, rule: str) -> None:
        """Record "yes, don't ask again": the allow rule(s) apply from now on and go to the local settings file."""
        path = self.local_settings_path
        added = []
        for text in split_rules(rule):
            if any(e.behavior == "allow" and e.rule == text for e in self.entries()):
                continue
            entry = RuleEntry("allow", text, "local" if path else "session", path)
            if self._add(entry):
                added.append(entry.rule)
        if path is None or not added:
            return
        try:
            data = json.loads(path.read_text()) if path.exists() else {}
        except (OSError, ValueError):
            data = {}
        if not isinstance(data, dict):
            data = {}
        perms = data.setdefault("permissions", {})
        allow = perms.setdefault("allow", [])
        allow.extend(r for r in added if r not in allow)
        _write_json(path, data)

    def add_directory(self, directory: Path | str) -> Path:
        """Treat `directory` as a working directory too (reads allowed, edits in acceptEdits)."""
        resolved = Path(os.path.realpath(Path(directory).expanduser()))
        if resolved not in self.additional_dirs:
            self.additional_dirs.append(resolved)
        return resolved

    def working_directories(self, cwd: Path | None = None) -> list[Path]:
        env = self._env(cwd)
        return [Path(d) for d in env.dirs]

    def read_deny_check(self, cwd: Path | None = None) -> ReadDenyRules | None:
        """A test for the files a search found, or None when no Read deny rule names a path.

        Glob and Grep get their paths from ripgrep's walk, which follows no symlinks below a
        root that is already resolved, so each path is absolute and resolved as it comes: the
        rules are compiled once here, into one regex over the absolute path, and a path is
        checked by that one match alone (no system call per file).
        """
        rules = [(entry, rule) for entry, rule in self._rules("deny") if rule.tool == "Read" and not rule.whole_tool]
        if not rules:
            return None
        env = self._env(cwd)
        patterns = []
        for entry, rule in rules:
            base = str(entry.base_dir) if entry.base_dir is not None else str(env.cwd)
            patterns.append(path_pattern(rule.content, base_dir=base, cwd=str(env.cwd), home=env.home))
        return ReadDenyRules(patterns)

    def read_denied(self, path: str, *, cwd: Path | None = None) -> bool:
        """A Read deny rule covers `path` (relative to the working directory): tools must not show it."""
        rules = [(entry, rule) for entry, rule in self._rules("deny") if rule.tool == "Read" and not rule.whole_tool]
        if not rules:
            return False  # Glob and Grep ask this for every match: no path work without a rule
        env = self._env(cwd)
        resolved = os.path.realpath(os.path.join(env.cwd, path))
        target = PathTarget("read", resolved, resolved, os.path.isdir(resolved), env.inside(resolved))
        return any(self._matches(rule, entry, "Read", {}, target, env) for entry, rule in rules)

    def cycle_mode(self) -> str:
        i = CYCLE.index(self.mode) if self.mode in CYCLE else -1
        self.mode = CYCLE[(i + 1) % len(CYCLE)]
        return self.mode

    # ------------------------------------------------------------ decisions

    def decide(self, tool: Tool, input: dict[str, Any], *, cwd: Path | None = None) -> Decision:
        """allow / deny / ask for one call; `cwd` is the session's, used when the policy has none."""
        env = self._env(cwd)
        read_only = _safe_call(tool.is_read_only, input)
        if tool.name == "Bash" and isinstance(input.get("command"), str):
            sandboxed = _safe_call(tool.sandbox_auto_allows, input)
            leaves = _safe_call(getattr(tool, "leaves_sandbox", lambda _: False), input)
            return self._decide_bash(input["command"], read_only, env, sandboxed, leaves)
        target = path_target(tool.name, input, env)
        # an MCP tool its server calls read-only (the hint lets it run beside others once allowed)
        hinted = tool.name.startswith("mcp__") and _safe_call(tool.is_concurrency_safe, input)
        decision = self._decide_path_tool(tool.name, input, read_only, target, env, hinted=hinted)
        return decision if target is None else dataclasses.replace(decision, resolved=target.resolved)

    def _decide_path_tool(
        self, name: str, input: dict[str, Any], read_only: bool, target: PathTarget | None, env: WorkingDirs,
        *, hinted: bool = False,
    ) -> Decision:
        for entry, rule in self._rules("deny"):
            if self._matches(rule, entry, name, input, target, env):
                return _deny_by_rule(name, entry.rule)
        if name == "ExitPlanMode":
            return self._decide_plan_exit()
        if name == "AskUserQuestion":
            return self._decide_question()
        if self.mode == "plan" and not read_only and name not in NO_PERMISSION_TOOLS | PLAN_ASKS_TOOLS:
            if not hinted:
                return _plan_denial(name)
            # an MCP tool its server calls read-only: a rule or a person may let it run while planning
            for entry, rule in self._rules("allow"):
                if self._matches(rule, entry, name, input, target, env):
                    return Decision("allow", rule=entry.rule, reason="rule")
            return self._ask(name, f"{name} says it only reads (its server's claim): run it in plan mode?",
                             suggest_for_path(name, target, env), "plan_read_only")
        if target is not None and target.kind == "write":
            danger = sensitive_write_reason(
                target.resolved, cwd=env.cwd, home=Path(env.home), settings_dirs=own_dirs()
            )
            if danger:
                return self._ask(name, f"{name} {danger}.", danger=danger, reason="danger")
        for entry, rule in self._rules("ask"):
            if self._matches(rule, entry, name, input, target, env):
                suggestion = suggest_for_path(name, target, env)
                return self._ask(name, f"Rule {entry.rule} requires approval.", suggestion, "ask_rule")
        if name in NO_PERMISSION_TOOLS:
            return Decision("allow", reason="no_permission")
        if self.mode == "bypassPermissions":
            return Decision("allow", reason="mode")
        for entry, rule in self._rules("allow"):
            if self._matches(rule, entry, name, input, target, env):
                return Decision("allow", rule=entry.rule, reason="rule")
        if read_only:
            if target is None or target.inside:
                return Decision("allow", reason="read_only")
            return self._ask(
                name, f"{name} wants to read {target.shown}, outside the working directories.",
                suggest_for_path(name, target, env), "outside",
            )
        if target is not None and target.kind == "write":
            if not target.inside:
                return self._ask(
                    name, f"{name} wants to write {target.shown}, outside the working directories.",
                    suggest_for_path(name, target, env), "outside",
                )
            if self.mode == "acceptEdits":
                return Decision("allow", reason="mode")
        return self._ask(
            name, f"{name} wants to {_verb(name)}.", suggest_for_path(name, target, env, input), "default"
        )

    def _decide_plan_exit(self) -> Decision:
        """ExitPlanMode: a person (or a PreToolUse hook speaking for them) ends plan mode; no rule or mode does."""
        if self.mode != "plan":
            return Decision("deny", f"Plan mode is not on (the mode is {self.mode}): there is no plan to approve. "
                            "Go on with the task.", reason="not_plan")
        message = "The plan is ready. Approve it to leave plan mode?"
        return self._ask("ExitPlanMode", message, danger=None, reason="plan_exit")

    def _decide_question(self) -> Decision:
        """AskUserQuestion: the question is the prompt, in every mode; only a person answers it
        (`tools/ask_user.py`)."""
        if not self.interactive:
            return Decision("deny", NO_ONE_TO_ASK, reason="non_interactive")
        if self.mode == "dontAsk":
            return Decision(
                "deny", NO_ONE_TO_ASK.replace("this session is non-interactive", "dontAsk mode asks nothing"),
                reason="dont_ask")
        return Decision("ask", "The model has questions for you.", reason="question")

    def decide_call(
        self, tool: Tool, input: dict[str, Any], *, cwd: Path | None = None, hook: HookOutcome | None = None
    ) -> Decision:
        """The decision for one tool call: `decide`, then a PreToolUse hook's allow/ask on top.

        "allow" stands in for a person's yes: it answers a question, or a refusal made only
        because nobody could answer (print mode, dontAsk); deny rules, plan mode and
        dangerous commands still win.  "ask" turns an allow into a question.
        """
        decision = self.decide(tool, input, cwd=cwd)
        wanted = hook.permission_decision if hook is not None else None
        if hook is None or wanted is None or decision.danger:
            return decision
        label = hook_label("PreToolUse", {"tool_name": tool.name})
        if wanted == "allow":
            unanswered = decision.behavior == "deny" and decision.reason in ("non_interactive", "dont_ask")
            if decision.behavior == "ask" or unanswered:
                return Decision("allow", rule=f"{label} hook", reason="hook", resolved=decision.resolved)
        elif wanted == "ask" and decision.behavior == "allow":
            message = hook.permission_decision_reason or f"A {label} hook asks for approval."
            if not self.interactive:
                return Decision(
                    "deny", f"Permission to use {tool.name} was not granted (non-interactive mode): {message}",
                    reason="non_interactive",
                )
            if self.mode == "dontAsk":
                return Decision(
                    "deny", f"Permission to use {tool.name} was not granted (dontAsk mode): {message}",
                    reason="dont_ask",
                )
            return Decision("ask", message, reason="hook", resolved=decision.resolved)
        elif wanted == "ask" and decision.behavior == "ask" and hook.permission_decision_reason:
            return dataclasses.replace(decision, message=hook.permission_decision_reason)
        return decision

    def _decide_bash(
        self, command: str, read_only: bool, env: WorkingDirs, sandboxed: bool = False, leaves: bool = False
    ) -> Decision:
        parsed = parse_command(command)
        parts = list(parsed.every_part()) if parsed is not None else []
        rule = self._bash_rule("deny", command, parsed, parts)
        if rule:
            return _deny_by_rule("Bash", rule)
        if parsed is not None:
            rule, unchecked = self._bash_path_deny(parsed, env)
            if rule:
                return _deny_by_rule("Bash", rule)
            if unchecked:
                return self._ask("Bash", f"This command {unchecked}.", danger=unchecked, reason="danger")
        if self.mode == "plan" and not read_only:
            return _plan_denial("Bash")
        danger = danger_reason(command, cwd=env.cwd, home=Path(env.home), settings_dirs=own_dirs())
        if danger:
            return self._ask("Bash", f"This command {danger}.", danger=danger, reason="danger")
        assert parsed is not None  # a command that does not parse is dangerous
        rule = self._bash_rule("ask", command, parsed, parts)
        if rule:
            return self._ask("Bash", f"Rule {rule} requires approval.", suggest_bash(parts, env), "ask_rule")
        if self.mode == "bypassPermissions":
            return Decision("allow", reason="mode")
        if leaves:
            # Outside the sandbox nothing contains the command: a person decides, every time (no rule, no hook).
            why = "asks to run outside the sandbox (dangerouslyDisableSandbox)"
            return self._ask("Bash", f"This command {why}.", danger=why, reason="unsandboxed")
        verdicts = {id(part): self._part_verdict(part, env) for part in parts}
        redirects_ok = all(
            self._reads_inside(r.target, env)
            for each in parsed.every_command() for r in each.compound_redirects
            if r.op in ("<", "<>") and r.target is not None
        )
        if parts and redirects_ok and parts_pass(parsed, lambda part: verdicts[id(part)] is not None, background=True):
            rules = list(dict.fromkeys(v for v in verdicts.values() if v and v != "read_only"))
            if rules:
                return Decision("allow", rule=", ".join(rules), reason="rule")
            return Decision("allow", reason="read_only")
        failing = [part for part in parts if verdicts[id(part)] is None]
        if failing and all(is_read_only_part(part) for part in failing):
            return self._ask(
                "Bash", "This command reads outside the working directories.", suggest_bash(failing, env), "outside"
            )
        if sandboxed and self.mode == "acceptEdits" and stays_inside(command, env.inside, env.resolve):
            return Decision("allow", reason="sandbox")
        return self._ask("Bash", "Bash wants to run a command.", suggest_bash(failing, env), "default")

    def _part_verdict(self, part: CommandPart, env: WorkingDirs) -> str | None:
        """"read_only", the allow rule that covers `part`, or None.

        A prefix rule never covers a `cd` (what follows would run elsewhere) nor
        an output redirection: only the whole-tool `Bash` rule does.
        """
        if not part.words:
            return None
        if is_read_only_part(part) and not (runs_git(part) and foreign_repository(env.cwd)):
            outside = self._outside_reads(part, env)
            if outside == []:
                return "read_only"
            granted = [self._read_rule(path, env) for path in outside or ()]
            if outside and all(granted):
                return ", ".join(dict.fromkeys(r for r in granted if r))
        if any(a.split("=", 1)[0] not in SAFE_ENV_VARS for a in part.assignments):
            return None
        changes_folder = unwrap(part.argv)[0][:1] in (["cd"], ["pushd"], ["popd"], ["chdir"])
        redirects = any(r.target.value not in _STREAMS for r in part.redirects if r.writes and r.target)
        forms = {part.normalized(), part.normalized(unwrap(part.argv, BENIGN_WRAPPERS)[0])}
        for entry, rule in self._rules("allow"):
            if rule.tool != "Bash":
                continue
            if rule.whole_tool or (
                not changes_folder and not redirects and any(bash_matches(rule.content, f) for f in forms if f)
            ):
                return entry.rule
        return None

    def _outside_reads(self, part: CommandPart, env: WorkingDirs) -> list[str] | None:
        """The real paths a read-only part reads outside the working directories; None: not known."""
        outside: list[str] = []
        for path in read_paths(part):
            found = resolve_paths(path, str(env.cwd), env.home)
            if found is None:
                return None
            outside += [r for r in found if not env.inside(r)]
        return list(dict.fromkeys(outside))

    @staticmethod
    def _reads_inside(target: Any, env: WorkingDirs) -> bool:
        if not static(target):
            return False
        found = resolve_paths(target.value, str(env.cwd), env.home)
        return found is not None and all(env.inside(r) for r in found)

    def _bash_path_deny(self, parsed: ParsedCommand, env: WorkingDirs) -> tuple[str | None, str | None]:
        """The Read/Edit deny rule a path in the command falls under, or why its paths cannot be checked."""
        reads = [(e, r) for e, r in self._rules("deny") if r.tool in ("Read", "Edit") and not r.whole_tool]
        whole = next((e.rule for e, r in self._rules("deny") if r.tool == "Read" and r.whole_tool), None)
        if not reads and not whole:
            return None, None
        if whole:
            # `Read` denied outright: no file a read-only command names may be read.
            for part in parsed.every_part():
                if is_read_only_part(part, known_paths=False) and any(
                    os.path.lexists(r) for p in read_paths(part) for r in resolve_paths(p, str(env.cwd), env.home) or ()
                ):
                    return whole, None
        unchecked = self._recursive_reads(parsed, env, reads)
        if unchecked:
            return None, unchecked
        for word, kind in _path_words(parsed):
            rules = [(e, r) for e, r in reads if r.tool == "Read" or kind == "write"]
            if not rules:
                continue
            if not static(word):
                shown = ", ".join(e.rule for e, _ in rules)
                return None, f"uses {word.raw}, only known when it runs, so it cannot be checked against {shown}"
            values = [word.value]
            if word.value.startswith("--") and "=" in word.value:
                values = [word.value.split("=", 1)[1]]
            elif word.value.startswith("-") and not word.value.startswith("--"):
                values = attached_values(word.value)
            for value in values:
                found = resolve_paths(value, str(env.cwd), env.home) if value else []
                if found is None:
                    return None, f"uses {word.raw}, which matches too many files to check against the deny rules"
                for resolved in found:
                    target = PathTarget("read", resolved, resolved, os.path.isdir(resolved), env.inside(resolved))
                    for entry, rule in rules:
                        if self._matches(rule, entry, rule.tool, {}, target, env):
                            return entry.rule, None
        return None, None

    def _recursive_reads(
        self, parsed: ParsedCommand, env: WorkingDirs, rules: list[tuple[RuleEntry, Rule]]
    ) -> str | None:
        """Why a recursive search (`rg x`, `grep -r x src`) may read a file a Read deny rule covers, or None."""
        rules = [(e, r) for e, r in rules if r.tool == "Read"]
        if not rules:
            return None
        for part in parsed.every_part():
            argv = unwrap(part.argv)[0]
            if not argv or not _searches_folders(argv):
                continue
            found = [resolve_paths(p, str(env.cwd), env.home) or [] for p in read_paths(part)]
            folders = [r for paths in found for r in paths if os.path.isdir(r)]
            for folder in folders or [str(env.cwd)]:
                hit = self._denied_inside(folder, env, rules)
                if hit:
                    return f"searches {folder}, which holds {hit}"
        return None

    def _denied_inside(self, folder: str, env: WorkingDirs, rules: list[tuple[RuleEntry, Rule]]) -> str | None:
        """A file under `folder` a deny rule covers ("<file> (denied by <rule>)"); looks at a bounded number."""
        seen = 0
        for root, dirs, files in os.walk(folder):
            for name in [*files, *dirs]:
                seen += 1
                if seen > _WALK_LIMIT:
                    return f"more than {_WALK_LIMIT} entries, too many to check against {rules[0][0].rule}"
                path = os.path.join(root, name)
                resolved = os.path.realpath(path)
                target = PathTarget("read", resolved, resolved, os.path.isdir(resolved), env.inside(resolved))
                for entry, rule in rules:
                    if self._matches(rule, entry, "Read", {}, target, env):
                        return f"{os.path.relpath(path, folder)} (denied by {entry.rule})"
        return None

    def _read_rule(self, resolved: str, env: WorkingDirs) -> str | None:
        """The Read allow rule letting a read-only command read `resolved`."""
        target = PathTarget("read", resolved, resolved, os.path.isdir(resolved), False)
        if any(rule.tool == "Read" and self._matches(rule, entry, "Read", {}, target, env)
               for entry, rule in self._rules("deny")):
            return None
        for entry, rule in self._rules("allow"):
            if rule.tool == "Read" and self._matches(rule, entry, "Read", {}, target, env):
                return entry.rule
        return None

    def _bash_rule(
        self, behavior: str, command: str, parsed: ParsedCommand | None, parts: list[CommandPart]
    ) -> str | None:
        """The first deny or ask rule matching the command or any part of it, in any spelling."""
        rules = [(entry, rule) for entry, rule in self._rules(behavior) if rule.tool == "Bash"]
        if not rules:
            return None
        forms = {" ".join(command.split())}
        for part in parts:
            forms |= rule_forms(part)
        if parsed is None:
            forms |= fallback_forms(command)
        for entry, rule in rules:
            if rule.whole_tool or any(bash_matches(rule.content, form) for form in forms if form):
                return entry.rule
        return None

    def _matches(
        self,
        rule: Rule,
        entry: RuleEntry,
        name: str,
        input: dict[str, Any],
        target: PathTarget | None,
        env: WorkingDirs,
    ) -> bool:
        if not rule.names_tool(name):
            return False
        if rule.whole_tool:
            return True
        if name in PATH_TOOLS:
            if target is None:
                return False
            base = str(entry.base_dir) if entry.base_dir is not None else str(env.cwd)
            pattern = path_pattern(rule.content, base_dir=base, cwd=str(env.cwd), home=env.home)
            if pattern.matches(target.resolved, target.is_dir):
                return True
            # A search of a folder reads what is in it: deny and ask rules on its contents apply.
            return entry.behavior != "allow" and target.is_dir and pattern.matches(target.resolved + "/\0", False)
        if name == "Bash":
            return False
        return generic_matches(rule.content, input)

    def _ask(self, name: str, message: str, suggestion: str | None = None, reason: str = "default",
             *, danger: str | None = None) -> Decision:
        if suggestion is not None and has_hidden(suggestion) or danger:
            suggestion = None  # a rule nobody can read as written is never proposed
        # Where nobody can be asked the rule is still named: PermissionRequest hooks are offered it.
        if not self.interactive:
            return Decision(
                "deny", f"Permission to use {name} was not granted (non-interactive mode): {message}",
                danger=danger, suggested_rule=suggestion, reason="non_interactive",
            )
        if self.mode == "dontAsk":
            return Decision(
                "deny", f"Permission to use {name} was not granted (dontAsk mode runs only pre-approved tools): "
                f"{message}", danger=danger, suggested_rule=suggestion, reason="dont_ask",
            )
        return Decision("ask", message, danger=danger, suggested_rule=suggestion, reason=reason)

    # ------------------------------------------------------------ internals

    def _add(self, entry: RuleEntry, where: str | None = None) -> bool:
        try:
            rule = Rule.parse(entry.rule)
        except ValueError as exc:
            self.problems.append(f"{where or entry.source}: {exc}")
            return False
        self._entries.append((RuleEntry(entry.behavior, rule.text, entry.source, entry.path, entry.base_dir), rule))
        return True

    def _rules(self, behavior: str) -> list[tuple[RuleEntry, Rule]]:
        return [(entry, rule) for entry, rule in self._entries if entry.behavior == behavior]

    def _env(self, cwd: Path | None) -> WorkingDirs:
        base = self.cwd or (Path(cwd) if cwd is not None else Path.cwd())
        real = os.path.realpath(base)
        dirs = dict.fromkeys([real, *(str(d) for d in self.additional_dirs)])
        return WorkingDirs(Path(real), tuple(dirs), os.path.realpath(os.path.expanduser("~")))


# ------------------------------------------------------------ helpers

# How many entries a recursive search's folder may hold for its deny-rule check.
_WALK_LIMIT = 20000
# Programs that read every file under a folder they are given.
_RECURSIVE_READERS = frozenset({"rg", "ag", "ack", "ugrep"})


def _searches_folders(argv: list[str]) -> bool:
    name = argv[0].rsplit("/", 1)[-1]
    if name in _RECURSIVE_READERS or (name == "git" and "grep" in argv[1:3]):
        return True
    if name in ("grep", "egrep", "fgrep", "zgrep"):
        return any(
            a in ("--recursive", "--dereference-recursive", "--directories=recurse")
            or (a.startswith("-") and not a.startswith("--") and set(a[1:]) & {"r", "R"})
            for a in argv[1:]
        )
    return False


# Output redirections that write no file.
_STREAMS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


def _path_words(parsed: ParsedCommand) -> list[tuple[Any, str]]:
    """Every word of a command that may name a file, with "read" or "write" (it may be written)."""
    found: list[tuple[Any, str]] = []
    for each in parsed.every_command():
        for redirect in [*each.compound_redirects, *(r for p in each.parts for r in p.redirects)]:
            if redirect.target is not None and redirect.body is None:
                found.append((redirect.target, "write" if redirect.writes else "read"))
        for part in each.parts:
            kind = "read" if is_read_only_part(part) else "write"
            for word in part.words[1:]:
                found.append((word, kind))
    return found


def _deny_by_rule(name: str, rule: str) -> Decision:
    return Decision("deny", f"Permission to use {name} has been denied by rule {rule}.", rule=rule, reason="rule")


def _plan_denial(name: str) -> Decision:
    return Decision(
        "deny",
        f"{name} was not run: plan mode is on, and in plan mode only read-only tools run. "
        "Keep researching with read-only tools, then present your plan with ExitPlanMode; "
        "changes can be made once the user approves it and plan mode ends.",
        reason="plan",
    )


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


def _safe_call(fn: Any, input: dict[str, Any]) -> bool:
    try:
        return bool(fn(input))
    except Exception:
        return False


def _verb(name: str) -> str:
    return {
        "Bash": "run a command",
        "Write": "write a file",
        "Edit": "edit a file",
        "MultiEdit": "edit a file",
        "NotebookEdit": "edit a notebook",
        "WebFetch": "fetch a web page",
    }.get(name, "run")
