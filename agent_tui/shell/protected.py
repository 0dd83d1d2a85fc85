"""The protected paths: one table for the permission policy, the danger checks and the sandbox.

A protected path is one whose change lets a later program run code or grant
permissions without anyone being asked: agent settings and hooks, the MCP server
list, editor and CI configuration that runs tasks, git's configuration and
hooks, shell startup files.  The file tools and Bash's danger check ask before
writing any of them, in every mode (see `danger.sensitive_write_reason`); the
sandbox mounts them read-only inside every writable folder, and makes each
protected folder (and the folders holding one) a mount point, so that renaming
or replacing it fails too (see `tools/sandbox.py`).

The sandbox keeps `.git` writable except for `GIT_DIR_PROTECTED`, because git
must still write objects, refs, the index and its lock files to commit; the
file tools ask for any path under `.git`.
"""

from __future__ import annotations

import re

# Folders, relative to a working directory, whose contents configure agents, editors or CI.
PROJECT_DIRS = (".agent-tui", ".claude", ".vscode", ".idea", ".devcontainer", ".github/workflows", ".husky")
# Files, relative to a working directory, that other programs load and act on.
PROJECT_FILES = (".mcp.json", ".envrc", ".gitmodules", ".npmrc", ".pre-commit-config.yaml", ".ripgreprc")
# Inside a git directory: what makes git run programs or read its configuration from elsewhere.
GIT_DIR_PROTECTED = ("config", "config.worktree", "commondir", "hooks", "info", "modules", "worktrees")
# Of those, the ones a placeholder would break when missing (git reads an empty `commondir` as a path):
# a sandboxed command that creates one has it removed afterwards instead.
GIT_DIR_NO_PLACEHOLDER = ("commondir",)
SHELL_STARTUP_FILES = frozenset({
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv",
    ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".login", ".kshrc", ".mkshrc", ".inputrc",
})
# In the home folder (and in any writable folder, since a project may be the home folder itself).
HOME_FILES = (*sorted(SHELL_STARTUP_FILES), ".gitconfig")
HOME_DIRS = (".ssh", ".config/git", ".config/fish")

# Every name above, for spotting a protected place named inside a word only known when it runs.
PROTECTED_NAMES = tuple(
    dict.fromkeys(
        [".git", ".gitconfig", "agent-tui"]
        + [name.split("/", 1)[0] for name in (*PROJECT_DIRS, *PROJECT_FILES, *HOME_DIRS)]
        + sorted(SHELL_STARTUP_FILES)
    )
)
PROTECTED_NAMES_PATTERN = "|".join(re.escape(name) for name in PROTECTED_NAMES if name != ".config")


def project_reason(parts: list[str], target: str) -> str | None:
    """Why `parts` (an absolute path's components) name a protected project path, or None."""
    name = parts[-1]
    if name == ".mcp.json":
        return f"changes the MCP server list, whose servers run as commands ({target})"
    if name in PROJECT_FILES:
        return f"changes {name}, which other programs load and act on ({target})"
    if ".claude" in parts:
        return f"changes Claude Code project settings, which hold permission rules and hooks ({target})"
    for folder in PROJECT_DIRS:
        pieces = folder.split("/")
        for i in range(len(parts) - len(pieces) + 1):
            if parts[i : i + len(pieces)] == pieces:
                return f"changes {folder}/, whose files editors, CI or git run ({target})"
    return None
