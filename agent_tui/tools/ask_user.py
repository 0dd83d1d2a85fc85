"""AskUserQuestion: the model asks the person multiple-choice questions (Claude Code's name and schema).

The permission policy always asks for it, whatever the mode or the rules: the "permission
prompt" is the question.  A front end that can ask answers the request with an allow whose
`updated_input` is the model's input plus `answers` (question text -> the chosen label, the
labels of a multi-select joined by ", ", or the person's own words for "Other"), as Claude
Code's permission component and the Agent SDK's `can_use_tool` do.  The tool then hands the
answers to the model.  Where no one can answer (print mode) the policy refuses the call with a
message that says so, and the model goes on without.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agent_tui.tools.base import BaseTool, Progress, ToolContext, ToolResult

NAME = "AskUserQuestion"
MAX_QUESTIONS = 4
MIN_OPTIONS, MAX_OPTIONS = 2, 4
# Claude Code shows the header as a chip: a word or two.
MAX_HEADER = 12

DESCRIPTION = """\
Use this tool when you need to ask the user questions during execution. This allows you to:
1. Gather user preferences or requirements
2. Clarify ambiguous instructions
3. Get decisions on implementation choices as you work
4. Offer choices to the user about what direction to take.

Usage notes:
- Users will always be able to select "Other" to provide custom text input
- Use multiSelect: true to allow multiple answers to be selected for a question
- If you recommend a specific option, make that the first option in the list and add "(Recommended)" \
at the end of the label
- Ask 1-4 questions at a time, each with 2-4 options; do not add an "Other" option yourself"""

_OPTION = {
    "type": "object",
    "properties": {
        "label": {
            "type": "string",
            "description": "The display text for this option that the user will see and select. Concise (1-5 words).",
        },
        "description": {
            "type": "string",
            "description": "Explanation of what this option means or what will happen if chosen.",
        },
    },
    "required": ["label", "description"],
    "additionalProperties": False,
}

_QUESTION = {
    "type": "object",
    "properties": {
        "question": {
            "type": "string",
            "description": "The complete question to ask the user. Clear, specific, ending with a question mark.",
        },
        "header": {
            "type": "string",
            "description": f"Very short label displayed as a chip/tag (max {MAX_HEADER} chars). "
            "Examples: \"Auth method\", \"Library\", \"Approach\".",
        },
        "options": {
            "type": "array",
            "items": _OPTION,
            "minItems": MIN_OPTIONS,
            "maxItems": MAX_OPTIONS,
            "description": f"The available choices for this question. Must have {MIN_OPTIONS}-{MAX_OPTIONS} "
            "options. There should be no 'Other' option, that will be provided automatically.",
        },
        "multiSelect": {
            "type": "boolean",
            "description": "Set to true to allow the user to select multiple options instead of just one.",
        },
    },
    "required": ["question", "header", "options", "multiSelect"],
    "additionalProperties": False,
}

NO_ONE_TO_ASK = (
    "AskUserQuestion cannot be answered: this session is non-interactive, so no one can answer "
    "questions. Do not ask again; make the most reasonable choice yourself, say which, and go on."
)
NO_ANSWERS = "The user did not answer the questions (no answers were given). Ask again or go on without them."


def answer_text(answers: dict[str, str]) -> str:
    """What the model reads once the person answered (Claude Code's wording)."""
    pairs = ", ".join(f'"{question}"="{answer}"' for question, answer in answers.items())
    return f"User has answered your questions: {pairs}. You can now continue with the user's answers in mind."


class AskUserQuestionTool(BaseTool):
    name = NAME
    description = DESCRIPTION
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "items": _QUESTION,
                "minItems": 1,
                "maxItems": MAX_QUESTIONS,
                "description": f"Questions to ask the user (1-{MAX_QUESTIONS} questions)",
            },
            "answers": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "User answers collected by the permission component",
            },
        },
        "required": ["questions"],
        "additionalProperties": False,
    }

    def is_read_only(self, input: dict[str, Any]) -> bool:
        return True  # asking changes nothing; plan mode may ask too

    def summarize(self, input: dict[str, Any]) -> str:
        questions = input.get("questions")
        if not isinstance(questions, list) or not questions:
            return ""
        first = questions[0].get("question", "") if isinstance(questions[0], dict) else ""
        more = f" (+{len(questions) - 1} more)" if len(questions) > 1 else ""
        return f"{first}"[:80] + more

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        questions = input["questions"]
        if not 1 <= len(questions) <= MAX_QUESTIONS:
            return f"Ask between 1 and {MAX_QUESTIONS} questions (got {len(questions)})."
        texts = [q["question"] for q in questions]
        if len(set(texts)) != len(texts):
            return "Question texts must be unique."
        for q in questions:
            count = len(q["options"])
            if not MIN_OPTIONS <= count <= MAX_OPTIONS:
                return f"Question {q['question']!r} needs {MIN_OPTIONS}-{MAX_OPTIONS} options (got {count})."
            labels = [o["label"] for o in q["options"]]
            if len(set(labels)) != len(labels):
                return f"Option labels of question {q['question']!r} must be unique."
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        answers = input.get("answers") or {}
        if not answers:
            yield ToolResult(NO_ANSWERS, is_error=True)
            return
        yield ToolResult(answer_text(answers), data={"answers": answers})
