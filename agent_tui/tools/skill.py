"""Skill: the model loads a skill's instructions when it decides the skill applies (Claude Code's name).

A skill is a folder holding `SKILL.md` (front matter `name`, `description`, optional
`allowed-tools`; the body is the instructions) and any other files it needs.  The session finds
them (`engine/skills.py`) and lists each skill's name and description in the system prompt; this
tool hands the model the body, the folder, and the skill's other files, which Read may then open
without asking.  The skill's `allowed-tools` are allowed without asking until the prompt that
loaded it ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent_tui.tools.base import BaseTool, Progress, ToolContext, ToolResult

NAME = "Skill"
# Files of a skill folder listed for the model; a larger folder says how many more there are.
MAX_LISTED_FILES = 50


@dataclass(frozen=True, slots=True)
class SkillDefinition:
    """One `SKILL.md` and where it came from ("project" | "user")."""

    name: str
    description: str
    body: str
    path: Path
    source: str
    allowed_tools: tuple[str, ...] = ()

    @property
    def folder(self) -> Path:
        return self.path.parent

    def other_files(self) -> list[Path]:
        """The folder's files besides SKILL.md, hidden ones left out."""
        found = []
        for path in sorted(self.folder.rglob("*")):
            relative = path.relative_to(self.folder)
            if path.is_file() and path != self.path and not any(p.startswith(".") for p in relative.parts):
                found.append(path)
        return found


def skills_block(skills: Mapping[str, SkillDefinition]) -> str:
    """The system prompt's list of skills: what the model decides on."""
    lines = "\n".join(f"- {s.name}: {s.description}" for s in skills.values())
    return (
        "# Skills\n"
        "Skills are folders of instructions and files for particular tasks. When a task matches a "
        f"skill's description, call the {NAME} tool with its name before starting, then follow what it "
        "says. Available skills:\n" + lines
    )


def loaded_text(skill: SkillDefinition) -> str:
    """What the model reads when it loads `skill`."""
    parts = [f"Skill: {skill.name}", f"Base directory for this skill: {skill.folder}", "", skill.body.strip()]
    files = skill.other_files()
    if files:
        listed = "\n".join(f"- {path}" for path in files[:MAX_LISTED_FILES])
        more = f"\n(and {len(files) - MAX_LISTED_FILES} more)" if len(files) > MAX_LISTED_FILES else ""
        parts += ["", "Other files of this skill (open them with Read when the instructions call for them):",
                  listed + more]
    if skill.allowed_tools:
        parts += ["", "Allowed without asking while this task runs: " + ", ".join(skill.allowed_tools)]
    return "\n".join(parts)


class SkillTool(BaseTool):
    name = NAME
    description = (
        "Load a skill: its instructions, and the files that come with it. Skills are listed in the "
        "system prompt under \"Skills\"; when the task at hand matches one's description, load it "
        "before starting and follow its instructions. Only skills listed there exist."
    )
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "skill": {"type": "string", "description": "The skill's name, as listed (e.g. \"pdf\")."},
        },
        "required": ["skill"],
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        self._session: Any = None
        # Rules a loaded skill allowed, taken back when its prompt ends.
        self._granted: list[Any] = []

    # Any: tools sit below the engine and cannot name its Session.
    def attach_session(self, session: Any) -> None:
        self._session = session
        session.bus.add_listener(self._on_event)

    def is_read_only(self, input: dict[str, Any]) -> bool:
        return True  # it reads a file the session already knows; the rules it adds end with the prompt

    def summarize(self, input: dict[str, Any]) -> str:
        skill = input.get("skill")
        return skill[:80] if isinstance(skill, str) else ""

    def _skills(self) -> Mapping[str, SkillDefinition]:
        return getattr(self._session, "skills", None) or {}

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        skills = self._skills()
        if input["skill"].strip().lstrip("/") not in skills:
            known = ", ".join(sorted(skills)) or "none"
            return f"Unknown skill: {input['skill']!r}. Available skills: {known}."
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        skill = self._skills()[input["skill"].strip().lstrip("/")]
        try:
            skill = _reread(skill)
        except OSError as exc:
            yield ToolResult(f"Cannot read {skill.path}: {exc}", is_error=True)
            return
        self._grant(skill)
        yield ToolResult(loaded_text(skill), data={"skill": skill.name, "path": str(skill.path)})

    def _grant(self, skill: SkillDefinition) -> None:
        policy = getattr(self._session, "policy", None)
        if policy is None:
            return
        # Reading the skill's own files never asks (a user skill lives outside the project).
        folder_rule = f"Read(/{skill.folder.as_posix()}/**)"
        if not any(entry.rule == folder_rule for entry in policy.entries()):
            policy.add_rule(folder_rule, source="skill")
        for rule in skill.allowed_tools:
            try:
                self._granted.append(policy.add_rule(rule, source="skill"))
            except ValueError:
                continue

    def _on_event(self, event: Any) -> None:
        if type(event).__name__ == "QueryFinished" and getattr(event, "parent_tool_use_id", None) is None:
            policy, granted, self._granted = getattr(self._session, "policy", None), self._granted, []
            for entry in granted:
                try:
                    policy.remove_rule(entry)
                except (KeyError, OSError, ValueError):
                    continue


def _reread(skill: SkillDefinition) -> SkillDefinition:
    """The body as the file has it now (a skill edited since the session started is followed as edited)."""
    text = skill.path.read_text(encoding="utf-8")
    if text.startswith("---"):
        end = text.find("\n---", 3)
        text = text[end + 4:] if end != -1 else text
    return replace(skill, body=text.strip("\n"))
