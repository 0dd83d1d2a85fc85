"""Command hooks in Claude Code's protocol, so users' hook settings and scripts work unchanged.

Settings `hooks.<Event>` is a list of `{"matcher": str, "hooks": [{"type": "command",
"command": str, "timeout": seconds}]}`.  Every matching command runs at once, each in
its own process group (a timeout or an abort kills all it started), with one JSON
object on stdin: `session_id`, `transcript_path`, `cwd`, `permission_mode`,
`hook_event_name` and the event's own fields (`tool_name`, `tool_input`,
`tool_use_id`, `tool_response`, `error`, `prompt`, `stop_hook_active`,
`last_assistant_message`, `source`, `reason`, `agent_id`, `agent_type`, ...).
`transcript_path` names a file in Claude Code's transcript shape (engine/hook_transcript.py).

Exit 0 is success: stdout may be a JSON object (`continue`, `stopReason`,
`decision`, `reason`, `suppressOutput`, `systemMessage`, `hookSpecificOutput`), and
for UserPromptSubmit and SessionStart plain stdout is context for the model.  Exit 2
blocks: what blocking means depends on the event (a denied tool call, a loop that
goes on, a dropped prompt).  Any other exit code is an error shown to the user that
blocks nothing.

The runner reports and the callers decide: `run()` folds every command's answer into
one `HookOutcome` that the executor, the query loop and the session act on.  The
runner itself only publishes what is meant for the user (`notice` events of kind
"hook").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import events as ev

EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionStart",
    "Notification",
    # An MCP server asks the person for values: a hook may answer for them (engine/mcp_features.py).
    "Elicitation",
    "PostToolUseFailure",
    "PermissionRequest",
    "SubagentStart",
    "SessionEnd",
    "Setup",
)
# Claude Code's events agent-tui has no moment for: a configuration naming one is told they never run.
UNSUPPORTED_EVENTS = (
    "PostCompact",
    "StopFailure",
    "PostToolBatch",
    "PermissionDenied",
    "UserPromptExpansion",
    "InstructionsLoaded",
    "ConfigChange",
    "CwdChanged",
    "FileChanged",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "ElicitationResult",
    "WorktreeCreate",
    "WorktreeRemove",
)
DEFAULT_TIMEOUT = 60.0

# Claude Code overrides a Stop hook after 8 consecutive blocks; same variable, <= 0 disables the cap.
STOP_HOOK_BLOCK_CAP = 8
# Hook output beyond this many characters is cut before it reaches the model or the screen.
OUTPUT_CAP = 10_000
# Exit 2 blocks only here; for the other events its stderr is just shown to the user.
_BLOCKING_EVENTS = frozenset({
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "UserPromptSubmit", "Stop",
    "SubagentStop", "Elicitation",
})
# Where plain stdout of a successful hook is context for the model.
_STDOUT_IS_CONTEXT = frozenset({"UserPromptSubmit", "SessionStart"})
# The input field a group's matcher is tested against; other events ignore matchers.
_MATCH_FIELD = {
    "PreToolUse": "tool_name",
    "PostToolUse": "tool_name",
    "PostToolUseFailure": "tool_name",
    "PermissionRequest": "tool_name",
    "PreCompact": "trigger",
    "SessionStart": "source",
    "Elicitation": "mcp_server_name",
    "SessionEnd": "reason",
    "Setup": "trigger",
    "SubagentStart": "agent_type",
    "SubagentStop": "agent_type",
    "Notification": "notification_type",
}
_DECISION_RANK = {"allow": 1, "ask": 2, "deny": 3}
_PLAIN_MATCHER = re.compile(r"^[A-Za-z0-9_|]+$")


# A hook the driving program runs (the Agent SDK's hook callbacks): the event's JSON object in,
# the hook's JSON answer out, as a command's stdout would carry it.
HookCallback = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class HookCommand:
    # A shell command; for a callback, the name it is reported by.
    command: str
    timeout: float = DEFAULT_TIMEOUT
    callback: HookCallback | None = field(default=None, compare=False)


@dataclass(slots=True)
class HookRun:
    """What one command did."""

    command: str
    # None when the command timed out, could not start or was cancelled.
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    # stdout parsed as a JSON object (read on exit 0 only).
    output: dict[str, Any] | None = None


@dataclass(slots=True)
class HookOutcome:
    """Every matching hook's answer to one event, folded together."""

    event: str
    runs: list[HookRun] = field(default_factory=list)
    # Exit 2 or `decision: "block"` on an event that can be blocked; `reason` says why.
    blocked: bool = False
    reason: str = ""
    # `continue: false`: the whole query stops after this event.
    prevent_continuation: bool = False
    stop_reason: str = ""
    # PreToolUse: "allow" | "deny" | "ask" (the strictest of all hooks), and its reason.
    permission_decision: str | None = None
    permission_decision_reason: str = ""
    updated_input: dict[str, Any] | None = None
    # PermissionRequest: `hookSpecificOutput.decision` ({behavior, updatedInput, updatedPermissions,
    # message, interrupt}); a deny from any hook wins over an allow.
    permission_request: dict[str, Any] | None = None
    additional_context: list[str] = field(default_factory=list)
    # Elicitation: a hook's answer ("accept" | "decline" | "cancel") and the values it accepts with.
    elicitation_action: str | None = None
    elicitation_content: dict[str, Any] | None = None
    # The user aborted while the hooks ran; they were killed.
    aborted: bool = False


def stop_hook_block_cap() -> int:
    """How many Stop-hook blocks in a row may continue the loop (0: no cap)."""
    try:
        return int(os.environ.get("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", STOP_HOOK_BLOCK_CAP))
    except ValueError:
        return STOP_HOOK_BLOCK_CAP


def hook_label(event: str, fields: Mapping[str, Any]) -> str:
    """"PreToolUse:Bash", "SessionStart:startup", "Stop": how hooks are named to people and the model."""
    target = fields.get(_MATCH_FIELD.get(event, ""))
    return f"{event}:{target}" if isinstance(target, str) and target else event


def context_text(label: str, text: str) -> str:
    """Hook context as the model reads it: marked as coming from a hook, not from the user."""
    return f"<system-reminder>\n{label} hook additional context: {text}\n</system-reminder>"


def matcher_matches(matcher: str | None, value: str | None) -> bool:
    """Claude Code's matcher rule: empty or `*` matches all; `A|B` lists exact names; else a regex search."""
    if not matcher or matcher == "*":
        return True
    if value is None:
        return False
    if _PLAIN_MATCHER.match(matcher):
        return value in (part.strip() for part in matcher.split("|"))
    try:
        return re.search(matcher, value) is not None
    except re.error:
        return False


def parse_hooks(config: Mapping[str, Any] | None) -> tuple[dict[str, list[tuple[str, list[HookCommand]]]], list[str]]:
    """Settings `hooks` -> {event: [(matcher, commands)]} and the problems found on the way."""
    table: dict[str, list[tuple[str, list[HookCommand]]]] = {}
    problems: list[str] = []
    if not config:
        return table, problems
    if not isinstance(config, Mapping):
        return table, ["hooks: expected an object of events"]
    for event, groups in config.items():
        if event in UNSUPPORTED_EVENTS:
            problems.append(f"hooks: {event} hooks are not supported by agent-tui; they will not run")
            continue
        if event not in EVENTS:
            problems.append(f"hooks: unknown event {event!r} (known: {', '.join(EVENTS)})")
            continue
        if not isinstance(groups, list):
            problems.append(f"hooks.{event}: expected a list of {{matcher, hooks}} entries")
            continue
        for i, group in enumerate(groups):
            where = f"hooks.{event}[{i}]"
            if not isinstance(group, Mapping) or not isinstance(group.get("hooks"), list):
                problems.append(f"{where}: expected {{\"matcher\": ..., \"hooks\": [...]}}")
                continue
            matcher = group.get("matcher") or ""
            if not isinstance(matcher, str):
                problems.append(f"{where}.matcher: expected a string")
                continue
            commands = []
            for j, hook in enumerate(group["hooks"]):
                command = _parse_command(hook, f"{where}.hooks[{j}]", problems)
                if command is not None:
                    commands.append(command)
            if commands:
                table.setdefault(event, []).append((matcher, commands))
    return table, problems


def _parse_command(hook: Any, where: str, problems: list[str]) -> HookCommand | None:
    if not isinstance(hook, Mapping):
        problems.append(f"{where}: expected an object")
        return None
    if hook.get("type", "command") != "command":
        problems.append(f"{where}: only \"command\" hooks are supported, not {hook.get('type')!r}")
        return None
    command = hook.get("command")
    if not isinstance(command, str) or not command.strip():
        problems.append(f"{where}.command: expected a non-empty string")
        return None
    timeout = hook.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        problems.append(f"{where}.timeout: expected a positive number of seconds; using {DEFAULT_TIMEOUT:g}")
        timeout = DEFAULT_TIMEOUT
    return HookCommand(command, float(timeout))


class HookRunner:
    """Runs the configured hooks of a session and folds their answers.

    `permission_mode` is a callable because the mode changes during a session
    (Shift+Tab); `transcript_path` is whatever the transcript store sets.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None,
        *,
        cwd: Path,
        session_id: str,
        emit: Callable[[ev.Event], None],
        permission_mode: Callable[[], str] = lambda: "default",
        transcript_path: str | Callable[[], str] = "",
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.table, self.problems = parse_hooks(config)
        self.cwd = Path(cwd)
        self.session_id = session_id
        # The path scripts read the conversation from, or what brings that file up to date and names it.
        self.transcript_path = transcript_path
        self._emit = emit
        self._permission_mode = permission_mode
        self._env = {**os.environ, **(env or {}), "CLAUDE_PROJECT_DIR": str(self.cwd)}
        self._background: set[asyncio.Task[HookOutcome]] = set()
        self._owed: set[asyncio.Task[HookOutcome]] = set()

    def commands_for(self, event: str, fields: Mapping[str, Any] | None = None) -> list[HookCommand]:
        """The commands whose matcher accepts this event, each command once (first timeout wins)."""
        target = (fields or {}).get(_MATCH_FIELD.get(event, ""))
        uses_matcher = event in _MATCH_FIELD
        seen: dict[str, HookCommand] = {}
        for matcher, commands in self.table.get(event, []):
            if uses_matcher and not matcher_matches(matcher, target):
                continue
            for command in commands:
                seen.setdefault(command.command, command)
        return list(seen.values())

    def add_callback(self, event: str, matcher: str | None, hook: HookCommand) -> None:
        """A hook the driving program answers (`hook.callback`), beside the configured commands."""
        if event not in EVENTS:
            raise ValueError(f"unknown hook event {event!r}; one of: {', '.join(EVENTS)}")
        self.table.setdefault(event, []).append((matcher or "", [hook]))

    def has(self, event: str, fields: Mapping[str, Any] | None = None) -> bool:
        return bool(self.commands_for(event, fields))

    async def run(
        self,
        event: str,
        fields: Mapping[str, Any],
        *,
        abort: asyncio.Event | None = None,
        parent_tool_use_id: str | None = None,
    ) -> HookOutcome:
        """Run every matching hook in parallel and fold their answers into one outcome."""
        outcome = HookOutcome(event)
        commands = self.commands_for(event, fields)
        if not commands:
            return outcome
        if abort is not None and abort.is_set():
            outcome.aborted = True
            return outcome
        transcript = self.transcript_path
        payload = {
            "session_id": self.session_id,
            "transcript_path": transcript() if callable(transcript) else transcript,
            "cwd": str(self.cwd),
            "permission_mode": self._permission_mode(),
            "hook_event_name": event,
            **fields,
        }
        stdin = json.dumps(payload, ensure_ascii=False, default=str).encode()
        runs = await self._run_all(commands, stdin, abort)
        if runs is None:
            outcome.aborted = True
            return outcome
        label = hook_label(event, fields)
        for command, run in zip(commands, runs, strict=False):
            outcome.runs.append(run)
            self._fold(outcome, label, command, run, parent_tool_use_id)
        return outcome

    def notify(
        self, message: str, *, notification_type: str = "permission_prompt", parent_tool_use_id: str | None = None
    ) -> None:
        """Notification hooks, in the background: a person is waiting and must not wait for them too."""
        fields = {"message": message, "notification_type": notification_type}
        if not self.has("Notification", fields):
            return
        task = asyncio.get_running_loop().create_task(
            self.run("Notification", fields, parent_tool_use_id=parent_tool_use_id),
            name="hooks:Notification",
        )
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def run_owed(self, event: str, fields: Mapping[str, Any]) -> None:
        """Run the hooks in the background without dropping them: `aclose` waits for them (each within
        its timeout), where background notifications are stopped."""
        task = asyncio.get_running_loop().create_task(self.run(event, fields), name=f"hooks:{event}")
        self._owed.add(task)
        task.add_done_callback(self._owed.discard)

    async def settle(self) -> None:
        """Wait for the owed hooks (`run_owed`)."""
        if self._owed:
            await asyncio.gather(*list(self._owed), return_exceptions=True)

    async def aclose(self) -> None:
        """Finish owed hooks; stop background ones (their process groups are killed)."""
        await self.settle()
        tasks = list(self._background)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # ------------------------------------------------------------ running

    async def _run_all(
        self, commands: list[HookCommand], stdin: bytes, abort: asyncio.Event | None
    ) -> list[HookRun] | None:
        tasks = [asyncio.ensure_future(self._run_one(c, stdin)) for c in commands]
        gathered = asyncio.gather(*tasks)
        waiter = asyncio.ensure_future(abort.wait()) if abort is not None else None
        try:
            if waiter is None:
                return await gathered
            done, _ = await asyncio.wait({gathered, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if gathered in done:
                return gathered.result()
            return None
        finally:
            if waiter is not None:
                waiter.cancel()
            pending = [t for t in tasks if not t.done()]
            if pending:
                for task in pending:
                    task.cancel()
                # Let each hook kill its process group before returning (or re-raising).
                await asyncio.wait(pending)

    async def _run_one(self, hook: HookCommand, stdin: bytes) -> HookRun:
        if hook.callback is not None:
            return await _run_callback(hook, stdin)
        try:
            proc = await asyncio.create_subprocess_shell(
                hook.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                env=self._env,
                start_new_session=True,
            )
        except OSError as exc:
            return HookRun(hook.command, None, stderr=f"could not start: {exc}")
        finished = False
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), hook.timeout)
            finished = True
        except TimeoutError:
            return HookRun(hook.command, None, timed_out=True)
        finally:
            if not finished:
                _kill_group(proc.pid)
                with contextlib.suppress(ProcessLookupError):
                    await proc.wait()
        return HookRun(hook.command, proc.returncode, _decode(out), _decode(err))

    # ------------------------------------------------------------ folding

    def _fold(
        self, outcome: HookOutcome, label: str, hook: HookCommand, run: HookRun, parent: str | None
    ) -> None:
        event = outcome.event

        def tell(message: str) -> None:
            self._emit(ev.Notice(kind="hook", message=_cap(message), parent_tool_use_id=parent))

        if run.timed_out:
            tell(f"{label} hook `{hook.command}` timed out after {hook.timeout:g}s and was killed")
            return
        if run.exit_code == 2:
            reason = run.stderr.strip() or f"`{hook.command}` exited with code 2"
            if event in _BLOCKING_EVENTS:
                outcome.blocked = True
                outcome.reason = _join(outcome.reason, reason)
                if event == "PreToolUse":
                    _decide(outcome, "deny", reason)
                elif event == "PermissionRequest":
                    outcome.permission_request = {"behavior": "deny", "message": reason}
            else:
                tell(f"{label} hook: {reason}")
            return
        if run.exit_code != 0:
            code = "could not run" if run.exit_code is None else f"failed with exit code {run.exit_code}"
            detail = run.stderr.strip()
            tell(f"{label} hook `{hook.command}` {code}" + (f": {detail}" if detail else ""))
            return

        stdout = run.stdout.strip()
        output = _json_object(stdout)
        run.output = output
        if output is None:
            if stdout and event in _STDOUT_IS_CONTEXT:
                outcome.additional_context.append(_cap(stdout))
            if stdout:
                tell(f"{label} hook succeeded: {stdout}")
            return
        self._fold_json(outcome, output)
        if isinstance(output.get("systemMessage"), str) and output["systemMessage"]:
            tell(f"{label} hook: {output['systemMessage']}")
        if stdout and not output.get("suppressOutput"):
            tell(f"{label} hook succeeded: {stdout}")

    def _fold_json(self, outcome: HookOutcome, output: dict[str, Any]) -> None:
        event = outcome.event
        if output.get("continue") is False:
            outcome.prevent_continuation = True
            stop = output.get("stopReason")
            if isinstance(stop, str) and stop:
                outcome.stop_reason = _join(outcome.stop_reason, stop)
        reason = output.get("reason") if isinstance(output.get("reason"), str) else ""
        decision = output.get("decision")
        if event == "PreToolUse" and decision in ("approve", "block"):
            # The older PreToolUse spelling of permissionDecision.
            _decide(outcome, "allow" if decision == "approve" else "deny", reason)
        elif decision == "block" and event in _BLOCKING_EVENTS:
            outcome.blocked = True
            outcome.reason = _join(outcome.reason, reason or "Blocked by a hook")
        specific = output.get("hookSpecificOutput")
        if not isinstance(specific, dict):
            return
        if event == "PreToolUse":
            permission = specific.get("permissionDecision")
            if permission in _DECISION_RANK:
                why = specific.get("permissionDecisionReason")
                _decide(outcome, permission, why if isinstance(why, str) else "")
            updated = specific.get("updatedInput")
            if isinstance(updated, dict):
                outcome.updated_input = updated
        if event == "Elicitation" and specific.get("action") in ("accept", "decline", "cancel"):
            outcome.elicitation_action = specific["action"]
            content = specific.get("content")
            outcome.elicitation_content = content if isinstance(content, dict) else None
        if event == "PermissionRequest":
            _decide_request(outcome, specific.get("decision"))
        context = specific.get("additionalContext")
        if isinstance(context, str) and context.strip():
            outcome.additional_context.append(_cap(context.strip()))


async def _run_callback(hook: HookCommand, stdin: bytes) -> HookRun:
    """A callback answers like a command that exited 0 with its JSON on stdout; failing, like exit 1."""
    assert hook.callback is not None
    try:
        output = await asyncio.wait_for(hook.callback(json.loads(stdin)), hook.timeout)
    except TimeoutError:
        return HookRun(hook.command, None, timed_out=True)
    except Exception as exc:
        return HookRun(hook.command, 1, stderr=f"{type(exc).__name__}: {exc}")
    return HookRun(hook.command, 0, stdout=json.dumps(output if isinstance(output, dict) else {}))


def _decide(outcome: HookOutcome, decision: str, reason: str) -> None:
    """Fold one hook's permission decision in: deny beats ask beats allow."""
    current = outcome.permission_decision
    if current is None or _DECISION_RANK[decision] > _DECISION_RANK[current]:
        outcome.permission_decision = decision
        outcome.permission_decision_reason = reason
    elif decision == current and reason:
        outcome.permission_decision_reason = _join(outcome.permission_decision_reason, reason)


def permission_suggestions(rule: str | None) -> list[dict[str, Any]]:
    """The rule a permission prompt would offer for "always", in Claude Code's permission-update shape."""
    if not rule:
        return []
    name, _, rest = rule.partition("(")
    entry: dict[str, Any] = {"toolName": name}
    if rest.endswith(")"):
        entry["ruleContent"] = rest[:-1]
    return [{"type": "addRules", "rules": [entry], "behavior": "allow", "destination": "localSettings"}]


def rules_to_add(updates: Any) -> list[tuple[str, str]]:
    """(rule, destination) of every allow rule a hook's `updatedPermissions` adds."""
    found: list[tuple[str, str]] = []
    for update in updates if isinstance(updates, list) else []:
        if not isinstance(update, dict) or update.get("type") != "addRules" or update.get("behavior") != "allow":
            continue
        for rule in update.get("rules") or []:
            if isinstance(rule, dict) and isinstance(rule.get("toolName"), str):
                content = rule.get("ruleContent")
                text = f"{rule['toolName']}({content})" if isinstance(content, str) and content else rule["toolName"]
                found.append((text, str(update.get("destination") or "session")))
    return found


def _decide_request(outcome: HookOutcome, decision: Any) -> None:
    """Fold one PermissionRequest hook's `decision` in: deny beats allow."""
    if not isinstance(decision, dict) or decision.get("behavior") not in ("allow", "deny"):
        return
    current = outcome.permission_request
    if current is None or (current.get("behavior") == "allow" and decision["behavior"] == "deny"):
        outcome.permission_request = dict(decision)


def _kill_group(pgid: int) -> None:
    # start_new_session made the hook's shell the leader of its own group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _decode(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def _cap(text: str) -> str:
    if len(text) <= OUTPUT_CAP:
        return text
    return text[:OUTPUT_CAP] + f"\n... [{len(text) - OUTPUT_CAP} characters truncated]"


def _join(first: str, second: str) -> str:
    return f"{first}\n{second}" if first else second
