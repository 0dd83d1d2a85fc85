"""Project memory: the user's standing instructions, loaded into every request.

Files, in the order the model reads them (later ones are more specific):

1. the user's own `AGENTS.md` in the config folder (`AGENT_TUI_CONFIG_DIR`
   or the platform's, e.g. `~/.config/agent-tui/AGENTS.md`);
2. for each folder from the repository root (the nearest folder holding
   `.git`; the working directory itself outside a repository) down to the
   working directory: `AGENTS.md`, `CLAUDE.md`, `.agent-tui/AGENTS.md`.

A line may import another file with `@path` (relative to the importing file,
`~/...` or absolute), outside code blocks and code spans, up to 5 levels
deep; a file is loaded once however often it is imported.

The block is part of the system prompt, delimited by `<memory>` tags, so it
is in the first request and in every later one: compaction, which rewrites
messages only, never removes it.  `memory_block(cwd)` gives the same text to
code that builds a request some other way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import config_dir

MEMORY_FILE_NAMES = ("AGENTS.md", "CLAUDE.md", ".agent-tui/AGENTS.md")
MAX_IMPORT_DEPTH = 5
# A memory file is instructions, not data: larger files are cut here.
MAX_FILE_CHARS = 100_000

_IMPORT = re.compile(r"(?<!\S)@((?:[^\s\\]|\\ )+)")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_CODE_SPAN = re.compile(r"`+[^`]*`+")
_TRAILING_PUNCTUATION = ".,;:!?)]}'\""


@dataclass(frozen=True, slots=True)
class MemoryFile:
    path: Path
    # "user" | "project" | "import"
    scope: str
    content: str
    # For imports: the file whose `@path` brought this one in, and how deep.
    imported_from: Path | None = None
    depth: int = 0
    truncated: bool = False


@dataclass
class Memory:
    """The memory files loaded for a working directory, in reading order."""

    files: list[MemoryFile] = field(default_factory=list)
    # Files that exist but could not be used (unreadable, not text).
    problems: list[str] = field(default_factory=list)

    def block(self) -> str:
        """The delimited block for the system prompt ("" when there is no memory)."""
        if not self.files:
            return ""
        parts = [
            "<memory>",
            "Instructions the user keeps in memory files (AGENTS.md, CLAUDE.md). They override the "
            "defaults above and you must follow them; files listed later are more specific.",
        ]
        for f in self.files:
            attrs = f'path="{f.path}" scope="{f.scope}"'
            if f.imported_from is not None:
                attrs += f' imported-from="{f.imported_from}"'
            note = "\n[truncated]" if f.truncated else ""
            parts.append(f"<memory-file {attrs}>\n{f.content.rstrip()}{note}\n</memory-file>")
        parts.append("</memory>")
        return "\n\n".join(parts)


def repository_root(cwd: Path) -> Path | None:
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return None


def memory_paths(cwd: Path) -> list[tuple[Path, str]]:
    """Candidate memory files (existing or not) with their scope, in reading order."""
    cwd = Path(cwd).resolve()
    root = repository_root(cwd) or cwd
    folders = [cwd, *cwd.parents]
    folders = folders[: folders.index(root) + 1]
    out: list[tuple[Path, str]] = [(config_dir() / "AGENTS.md", "user")]
    for folder in reversed(folders):
        out.extend((folder / name, "project") for name in MEMORY_FILE_NAMES)
    return out


def load_memory(cwd: Path) -> Memory:
    memory = Memory()
    seen: set[Path] = set()
    for path, scope in memory_paths(cwd):
        if path.is_file():
            _load(path, scope, None, 0, memory, seen)
    return memory


def memory_block(cwd: Path) -> str:
    """The memory block for `cwd`, read from disk now."""
    return load_memory(cwd).block()


def _load(path: Path, scope: str, parent: Path | None, depth: int, memory: Memory, seen: set[Path]) -> None:
    key = path.resolve()
    if key in seen:
        return
    seen.add(key)
    try:
        content = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        memory.problems.append(f"{path}: not a UTF-8 text file, not loaded")
        return
    except OSError as exc:
        memory.problems.append(f"{path}: cannot read: {exc.strerror or exc}")
        return
    truncated = len(content) > MAX_FILE_CHARS
    if truncated:
        memory.problems.append(f"{path}: longer than {MAX_FILE_CHARS:,} characters, truncated")
        content = content[:MAX_FILE_CHARS]
    memory.files.append(MemoryFile(path, scope, content, parent, depth, truncated))
    if depth >= MAX_IMPORT_DEPTH:
        return
    for target in imports_of(content, path.parent):
        _load(target, "import", path, depth + 1, memory, seen)


def imports_of(content: str, base: Path) -> list[Path]:
    """Existing files named by `@path` in `content`, outside code, in order."""
    found: list[Path] = []
    in_fence = False
    for line in content.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for match in _IMPORT.finditer(_CODE_SPAN.sub(" ", line)):
            target = _resolve(match.group(1).replace("\\ ", " "), base)
            if target is not None and target not in found:
                found.append(target)
    return found


def _resolve(raw: str, base: Path) -> Path | None:
    candidates = [raw]
    stripped = raw.rstrip(_TRAILING_PUNCTUATION)
    if stripped and stripped != raw:
        candidates.append(stripped)
    for candidate in candidates:
        path = Path(candidate).expanduser()
        if not path.is_absolute():
            path = base / path
        try:
            if path.is_file():
                return path
        except OSError:
            continue
    return None


def project_memory_file(cwd: Path) -> Path:
    """The memory file of the working directory that `#text` appends to: the one the project
    uses (AGENTS.md, CLAUDE.md, .agent-tui/AGENTS.md, the first that exists), else a new AGENTS.md."""
    for name in MEMORY_FILE_NAMES:
        if (cwd / name).is_file():
            return cwd / name
    return cwd / MEMORY_FILE_NAMES[0]


def append_memory(cwd: Path, text: str) -> Path:
    """Add `text` as a bullet at the end of the project's memory file; the file's path."""
    path = project_memory_file(cwd)
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    separator = "" if not before or before.endswith("\n") else "\n"
    with path.open("a", encoding="utf-8") as out:
        out.write(f"{separator}- {' '.join(text.split())}\n")
    return path
