"""Prompt shortcuts typed in the input box (Claude Code's): `!command` runs the command as the
person's own Bash call (the engine's `run_shell_command`: the permission policy asks or refuses
as for the model's calls, the sandbox applies) and shows it like any tool row; what it printed goes
to the model with the next prompt.  `#text` adds a line to the project's memory file once the
person confirms it."""

from __future__ import annotations

from typing import Any

from .rewind import ChoiceScreen, ask_choice


async def run_shortcut(app: Any, text: str) -> None:
    stripped = text.strip()
    body = stripped[1:].strip()
    if stripped.startswith("!"):
        await _shell(app, body)
    else:
        await _remember(app, body)


async def _shell(app: Any, command: str) -> None:
    if not command:
        app.say("Type a shell command after ! (for example: !git status).", kind="error")
        return
    outcome = await app.session.run_shell_command(command)
    if outcome.ran:
        app.say("The command's output goes to the model with your next prompt.")


async def _remember(app: Any, text: str) -> None:
    if not text:
        app.say("Type what to remember after # (for example: # run tests with make check).", kind="error")
        return
    path = app.session.memory_file
    shown = path.relative_to(app.session.cwd) if path.is_relative_to(app.session.cwd) else path
    answer = await ask_choice(app, ChoiceScreen(f"Add to the project memory ({shown})?", text,
                                          [("add", f"Add it to {shown}"), ("cancel", "Cancel")]))
    if answer != "add":
        app.say("Not added to memory.")
        return
    try:
        app.session.remember(text)
    except OSError as exc:
        app.say(f"Could not write {shown}: {exc}", kind="error")
        return
    app.say(f"Added to {shown}; the model follows it from the next request.")
