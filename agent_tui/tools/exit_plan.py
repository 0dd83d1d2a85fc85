"""ExitPlanMode: the model presents its plan and asks to leave plan mode (Claude Code's name and schema).

The permission policy always asks for it in plan mode (and refuses it in any other mode); the
person's answer decides what follows.  The TUI offers: approve and ask before edits (the mode
becomes `default`), approve and auto-accept edits (the front end puts `acceptEdits` in force
before answering), keep planning (no), or keep planning with feedback.  A front end that
cannot ask (print mode) refuses it, so plan mode holds.  On approval the tool ends plan mode if
the front end has not already chosen another mode, and the turn goes on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agent_tui.tools.base import BaseTool, Progress, ToolContext, ToolResult

DESCRIPTION = """\
Use this tool when you are in plan mode and have finished researching and presenting your plan, and \
are ready to start making changes. It shows the plan to the user and asks them to approve it; once \
they do, plan mode ends and you can edit files and run commands.

Only use it for tasks that need planning the implementation of changes to code. For research \
tasks (reading files, searching, understanding the codebase) do not use it: just answer.

The plan should be concise Markdown: the steps you will take, the files you will change, and how \
you will check the result. If the user rejects the plan, they may say what to change: revise the \
plan and present it again."""

APPROVED = (
    "User has approved your plan. You can now start coding. Start with updating your todo list if "
    "applicable.\n\n## Approved Plan:\n{plan}"
)


class ExitPlanModeTool(BaseTool):
    name = "ExitPlanMode"
    description = DESCRIPTION
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "plan": {
                "type": "string",
                "description": "The plan you came up with, that you want to run by the user for approval. "
                "Markdown, concise.",
            }
        },
        "required": ["plan"],
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        self._session: Any = None

    # Any: tools sit below the engine and cannot name its Session.
    def attach_session(self, session: Any) -> None:
        self._session = session

    def is_read_only(self, input: dict[str, Any]) -> bool:
        return True  # it changes nothing but the session's mode, after the person agreed

    def summarize(self, input: dict[str, Any]) -> str:
        plan = input.get("plan")
        first = next((line.strip("# ").strip() for line in plan.splitlines() if line.strip()), "") if isinstance(
            plan, str) else ""
        return first[:80]

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        if not input["plan"].strip():
            return "plan must not be empty."
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        session = self._session
        if session is not None and session.policy.mode == "plan":
            session.set_permission_mode("default")
        yield ToolResult(APPROVED.format(plan=input["plan"].strip()),
                         data={"plan": input["plan"], "mode": session.policy.mode if session else None})
