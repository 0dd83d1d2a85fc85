"""TodoWrite: the agent's plan for the current task (Claude Code's schema and wording).

The whole list is replaced on every call.  It lives in the session's tool
state (`ctx.state["todos"]`, so a subagent keeps its own); the executor
publishes it on the bus as a `todo_updated` event.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agent_tui.tools.base import BaseTool, Progress, TodoList, ToolContext, ToolResult

TODOS = "todos"
STATUSES = ("pending", "in_progress", "completed")
RESULT_TEXT = (
    "Todos have been modified successfully. Ensure that you continue to use the todo list to track "
    "your progress. Please proceed with the current tasks if applicable"
)

DESCRIPTION = """\
Use this tool to create and manage a structured task list for your current coding session. This \
helps you track progress, organize complex tasks, and demonstrate thoroughness to the user.
It also helps the user understand the progress of the task and progress of their overall requests.

## When to Use This Tool
Use this tool proactively in these scenarios:
1. Complex multi-step tasks - When a task requires 3 or more distinct steps or actions
2. Non-trivial and complex tasks - Tasks that require careful planning or multiple operations
3. User explicitly requests todo list - When the user directly asks you to use the todo list
4. User provides multiple tasks - When users provide a list of things to be done
5. After receiving new instructions - Immediately capture user requirements as todos
6. When you start working on a task - Mark it as in_progress BEFORE beginning work. Ideally you \
should only have one todo as in_progress at a time
7. After completing a task - Mark it as completed and add any new follow-up tasks discovered \
during implementation

## When NOT to Use This Tool
Skip using this tool when:
1. There is only a single, straightforward task
2. The task is trivial and tracking it provides no organizational benefit
3. The task can be completed in less than 3 trivial steps
4. The task is purely conversational or informational

## Task States and Management
1. **Task States**: Use these states to track progress:
   - pending: Task not yet started
   - in_progress: Currently working on (limit to ONE task at a time)
   - completed: Task finished successfully

   Each task has two forms:
   - content: The imperative form describing what needs to be done (e.g., "Run tests")
   - activeForm: The present continuous form shown during execution (e.g., "Running tests")

2. **Task Management**:
   - Update task status in real-time as you work
   - Mark tasks complete IMMEDIATELY after finishing (don't batch completions)
   - Exactly ONE task must be in_progress at any time (not less, not more)
   - Complete current tasks before starting new ones
   - Remove tasks that are no longer relevant from the list entirely

3. **Task Completion Requirements**:
   - ONLY mark a task as completed when you have FULLY accomplished it
   - If you encounter errors, blockers, or cannot finish, keep the task as in_progress
   - When blocked, create a new task describing what needs to be resolved
   - Never mark a task as completed if tests are failing, the implementation is partial, or you \
encountered unresolved errors

When in doubt, use this tool. Being proactive with task management demonstrates attentiveness and \
ensures you complete all requirements successfully."""


class TodoWriteTool(BaseTool):
    name = "TodoWrite"
    description = DESCRIPTION
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "The updated todo list",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "minLength": 1},
                        "status": {"type": "string", "enum": list(STATUSES)},
                        "activeForm": {"type": "string", "minLength": 1},
                        "id": {"type": "string"},
                    },
                    "required": ["content", "status", "activeForm"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["todos"],
        "additionalProperties": False,
    }

    # The plan is session state, not the user's files: it never needs permission, even in plan mode.
    def is_read_only(self, input: dict[str, Any]) -> bool:
        return True

    # Two TodoWrites in one response must apply in order, so they do not run side by side.
    def is_concurrency_safe(self, input: dict[str, Any]) -> bool:
        return False

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        ids: set[str] = set()
        for i, todo in enumerate(input["todos"]):
            for key in ("content", "activeForm"):
                if not todo[key].strip():
                    return f"InputValidationError: todos[{i}].{key} must not be empty"
            todo_id = todo.get("id")
            if todo_id is not None:
                if todo_id in ids:
                    return f"InputValidationError: todos[{i}].id {todo_id!r} is used by another todo"
                ids.add(todo_id)
        return None

    def summarize(self, input: dict[str, Any]) -> str:
        todos = input.get("todos")
        if not isinstance(todos, list):
            return ""
        done = sum(1 for t in todos if isinstance(t, dict) and t.get("status") == "completed")
        return f"{done}/{len(todos)} done"

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult | TodoList]:
        todos = [_clean(todo) for todo in input["todos"]]
        old = ctx.state.get(TODOS, [])
        ctx.state[TODOS] = todos
        yield TodoList([dict(t) for t in todos])
        yield ToolResult(RESULT_TEXT, data={"old_todos": old, "todos": todos})


def _clean(todo: dict[str, Any]) -> dict[str, Any]:
    item = {"content": todo["content"], "status": todo["status"], "activeForm": todo["activeForm"]}
    if "id" in todo:
        item["id"] = todo["id"]
    return item
