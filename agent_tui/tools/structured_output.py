"""StructuredOutput: the final answer as JSON that matches `--json-schema` (Claude Code's structured output).

Offered only when the caller gives a schema.  Its input schema is that schema, so the model answers by
calling it; the input is checked against the whole schema (jsonschema), a mismatch goes back to the model
as the tool's error, and a match is kept in the session's tool state, where the result object reads it
(`structured_output`).  The session asks again, through a Stop hook, when the model ends without calling it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from .base import BaseTool, Progress, ToolContext, ToolResult

NAME = "StructuredOutput"
# Where the accepted value is kept (ToolContext.state, the session's tool state).
STATE_KEY = "structured_output"
DESCRIPTION = (
    "Use this tool to return your final response in the requested structured format. You MUST call this "
    "tool exactly once at the end of your response to provide the structured output."
)
# What the model reads when it ends a turn without calling the tool (a Stop hook's reason).
REMINDER = f"You MUST call the {NAME} tool to complete this request. Call this tool now."


def schema_problem(schema: Any) -> str | None:
    """Why `schema` cannot be a tool's input schema (None: it can)."""
    from jsonschema import SchemaError, validators

    if not isinstance(schema, Mapping):
        return "the schema must be a JSON object"
    if schema.get("type") != "object":
        return 'the schema must describe an object ("type": "object"), as a tool\'s input does'
    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        return f"not a valid JSON Schema: {exc.message}"
    return None


class StructuredOutputTool(BaseTool):
    name = NAME
    description = DESCRIPTION

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.input_schema = dict(schema)

    # Nothing in the project changes: it never asks, in any mode.
    def is_read_only(self, input: dict[str, Any]) -> bool:
        return True

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        from jsonschema import validators

        validator = validators.validator_for(self.input_schema)(self.input_schema)
        errors = sorted(validator.iter_errors(input), key=lambda e: list(e.absolute_path))
        if not errors:
            return None
        where = "/".join(str(p) for p in errors[0].absolute_path) or "(root)"
        return f"Output does not match required schema: {where}: {errors[0].message}"

    def summarize(self, input: dict[str, Any]) -> str:
        return f"{len(input)} field{'s' if len(input) != 1 else ''}"

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        ctx.state[STATE_KEY] = input
        yield ToolResult("Structured output provided successfully", data={"structured_output": input})
