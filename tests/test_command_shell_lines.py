"""``!`command` `` lines in custom commands run before the prompt is sent and carry their output
(engine/command_expansion.py), under the command's `allowed-tools` and the permission rules:
Anthropic's own `/commit` in a real git repository, through the installed `agent-tui -p`
against the loopback API."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.loopback import reply
from tests.test_claude_project import write
from tests.test_print_mode import env_for, run

# Anthropic's `.claude/commands/commit.md`, as Claude Code users copy it.
COMMIT_COMMAND = """\
---
allowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)
description: Create a git commit
---

## Context

- Current git status: !`git status`
- Current git diff (staged and unstaged changes): !`git diff HEAD`
- Current branch: !`git branch --show-current`
- Recent commits: !`git log --oneline -10`

## Your task

Based on the above changes, create a single git commit.
"""


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "A",
           "GIT_COMMITTER_EMAIL": "a@example.com", "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def repository(root: Path) -> Path:
    """A git repository with one commit, a changed file and a new one."""
    git(root, "init", "-q", "-b", "feature/login")
    (root / "app.py").write_text("TIMEOUT = 5\n")
    git(root, "add", "app.py")
    git(root, "commit", "-q", "-m", "Add the login timeout")
    (root / "app.py").write_text("TIMEOUT = 30\n")
    (root / "notes.txt").write_text("raise it\n")
    write(root / ".claude" / "commands" / "commit.md", COMMIT_COMMAND)
    return root


def prompt_text(api) -> str:
    """The text of the first request's prompt, as the server received it."""
    content = api.requests[0].body["messages"][0]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def test_commit_sends_the_output_of_its_git_commands(api, tmp_path):
    project = repository(tmp_path)
    api.push(reply("Committed."))

    out = run(["-p", "/commit"], project, env_for(api.url))

    assert out.returncode == 0, out.stderr
    sent = prompt_text(api)
    status = git(project, "status")
    assert f"- Current git status: {status.rstrip()}" in sent
    assert "Untracked files:" in sent and "notes.txt" in sent and "modified:   app.py" in sent
    assert "-TIMEOUT = 5\n+TIMEOUT = 30" in sent  # git diff HEAD
    assert "- Current branch: feature/login\n" in sent
    assert "Add the login timeout" in sent  # git log --oneline -10
    assert "!`" not in sent
    assert "Based on the above changes, create a single git commit." in sent


def test_a_line_that_needs_approval_fails_clearly_in_print_mode(api, tmp_path):
    write(tmp_path / ".claude" / "commands" / "mk.md", "Made: !`touch made.txt && echo done`\nSay so.")

    out = run(["-p", "/mk"], tmp_path, env_for(api.url))

    assert out.returncode == 1
    assert "/mk: !`touch made.txt && echo done` was not run" in out.stderr
    assert "allowed-tools" in out.stderr
    assert api.requests == [] and not (tmp_path / "made.txt").exists()


def test_allowed_tools_let_a_line_run_that_would_ask(api, tmp_path):
    write(tmp_path / ".claude" / "commands" / "mk.md",
          "---\nallowed-tools: Bash(touch:*)\n---\nMade: !`touch made.txt`[!`ls`]\nSay so.")
    api.push(reply("Made."))

    out = run(["-p", "/mk"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert (tmp_path / "made.txt").exists()
    assert "Made: [made.txt]" in prompt_text(api)


def test_a_deny_rule_stops_the_line_even_when_allowed_tools_name_it(api, tmp_path):
    write(tmp_path / ".claude" / "commands" / "st.md", "---\nallowed-tools: Bash(git status:*)\n---\n!`git status`")
    write(tmp_path / ".claude" / "settings.json", json.dumps({"permissions": {"deny": ["Bash(git status:*)"]}}))

    out = run(["-p", "/st"], tmp_path, env_for(api.url))

    assert out.returncode == 1 and "!`git status` was not run" in out.stderr
    assert api.requests == []
