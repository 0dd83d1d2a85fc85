"""Skills on disk: `<folder>/<name>/SKILL.md` in Claude Code's places and agent-tui's.

Lowest first, a later place's skill of the same name wins: `~/.claude/skills/` (the user's),
then the project's `.claude/skills/` and `.agent-tui/skills/`.  The front matter gives `name`
(the folder's name when absent), `description` (required: it is what the model decides on) and
`allowed-tools`; the body is what the Skill tool hands the model (`tools/skill.py`).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..tools.skill import SkillDefinition
from .claude_files import _string_list, split_front_matter

SKILL_FILE = "SKILL.md"
PROJECT_SKILL_DIRS = (Path(".claude") / "skills", Path(".agent-tui") / "skills")
USER_SKILL_DIR = Path(".claude") / "skills"


def skill_places(cwd: Path, home: Path | None = None) -> list[tuple[Path, str]]:
    """(folder, source) where skills are looked for, lowest first."""
    home = home if home is not None else Path(os.path.expanduser("~"))
    return [(home / USER_SKILL_DIR, "user"), *((cwd / folder, "project") for folder in PROJECT_SKILL_DIRS)]


def load_skills(
    cwd: Path, problems: list[str] | None = None, *, home: Path | None = None
) -> dict[str, SkillDefinition]:
    """Every skill found, by name; a SKILL.md that cannot be used is reported in `problems`."""
    problems = problems if problems is not None else []
    skills: dict[str, SkillDefinition] = {}
    seen: set[Path] = set()
    for folder, source in skill_places(cwd, home):
        if not folder.is_dir() or folder.resolve() in seen:
            continue  # a project in the home folder: ~/.claude/skills once
        seen.add(folder.resolve())
        for path in sorted(folder.glob(f"*/{SKILL_FILE}")):
            skill = _read_skill(path, source, problems)
            if skill is not None:
                skills[skill.name] = skill
    return skills


def _read_skill(path: Path, source: str, problems: list[str]) -> SkillDefinition | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path}: cannot read: {exc}")
        return None
    meta, body = split_front_matter(text)
    name = str(meta.get("name") or path.parent.name).strip()
    description = " ".join(str(meta.get("description") or "").split())
    if not description:
        problems.append(f"{path}: skill {name!r} has no description in its front matter, so it is not offered")
        return None
    if not name or any(c.isspace() for c in name):
        problems.append(f"{path}: skill name {name!r} must be one word")
        return None
    return SkillDefinition(name=name, description=description, body=body, path=path.resolve(), source=source,
                           allowed_tools=tuple(_string_list(meta.get("allowed-tools"))))
