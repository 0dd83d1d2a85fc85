"""`/rewind` (or Esc Esc with nothing running): go back to just before one of the session's prompts.

The list shows the prompts, newest first; choosing one asks what goes back (the code and the
conversation, the conversation only, the code only), and when the restore would overwrite files
changed outside agent-tui since that prompt, lists them and asks again.  The engine does the
work (`engine/checkpoints.py`); the view is then redrawn from the stored transcript and the
prompt is put back in the input box to edit and send again.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

# What goes back: (option id, label).
WHAT = (("both", "Code and conversation"), ("conversation", "Conversation only"), ("code", "Code only"))


class ChoiceScreen(ModalScreen[str | None]):
    """A title, a few lines of detail, and options; Enter picks one, Esc picks none."""

    DEFAULT_CSS = """
    ChoiceScreen { align: center middle; }
    ChoiceScreen > Vertical { width: 90%; max-width: 100; height: auto; max-height: 80%;
        border: round $primary; background: $surface; padding: 0 1; }
    ChoiceScreen #choice-title { text-style: bold; }
    ChoiceScreen #choice-detail { color: $text-muted; margin: 0 0 1 0; }
    ChoiceScreen OptionList { height: auto; max-height: 20; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="rewind.cancel")]

    def __init__(self, title: str, detail: str, options: list[tuple[str, str]]) -> None:
        super().__init__()
        self._title, self._detail, self._options = title, detail, options

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self._title, id="choice-title", markup=False)
            yield Static(self._detail, id="choice-detail", markup=False)
            yield OptionList(*(Option(label, id=key) for key, label in self._options), id="choice-options")

    def on_mount(self) -> None:
        self.query_one("#choice-detail").display = bool(self._detail)
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


def _when(created: float) -> str:
    seconds = max(0, time.time() - created)
    if seconds < 90:
        return f"{int(seconds)}s ago"
    if seconds < 90 * 60:
        return f"{int(seconds // 60)}m ago"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(created))


async def choose_and_rewind(app: Any) -> None:
    """The whole exchange: pick a prompt, what goes back, confirm overwrites; then rewind."""
    session = app.session
    checkpoints = getattr(session, "checkpoints", None)
    if checkpoints is None:
        app.say("Checkpoints are off in this session (they need git and a saved session).", kind="error")
        return
    if session.running:
        app.say("A turn is running: stop it (Esc) before rewinding.", kind="error")
        return
    listed = list(reversed(checkpoints.list()))
    if not listed:
        app.say("Nothing to rewind yet: each prompt starts a checkpoint.")
        return
    options = [(str(c.index), f"{c.index}. {' '.join(c.prompt.split())[:70]}  ({_when(c.created)})") for c in listed]
    picked = await ask_choice(app, ChoiceScreen("Rewind to just before which prompt?", "", options))
    if picked is None:
        return
    checkpoint = next(c for c in listed if str(c.index) == picked)
    what = await ask_choice(app, ChoiceScreen(f"Rewind to before prompt {checkpoint.index}: what goes back?",
                                        " ".join(checkpoint.prompt.split())[:200], list(WHAT)))
    if what is None:
        return
    await rewind_to(app, checkpoint, code=what in ("both", "code"), conversation=what in ("both", "conversation"))


async def rewind_to(app: Any, checkpoint: Any, *, code: bool, conversation: bool) -> None:
    checkpoints = app.session.checkpoints
    try:
        if code:
            outside = await asyncio.to_thread(checkpoints.changed_outside, checkpoint)
            if outside:
                shown = "\n".join(f"  {path}" for path in outside[:15])
                more = f"\n  … and {len(outside) - 15} more" if len(outside) > 15 else ""
                answer = await ask_choice(app, ChoiceScreen(
                    f"{len(outside)} file(s) changed outside agent-tui since then would be overwritten",
                    shown + more, [("go", "Overwrite them and rewind"), ("stop", "Cancel")]))
                if answer != "go":
                    return
        done = await asyncio.to_thread(checkpoints.rewind, app.session, checkpoint, code=code,
                                       conversation=conversation)
    except (RuntimeError, OSError) as exc:  # the engine's CheckpointError is a RuntimeError
        app.say(f"Cannot rewind: {exc}", kind="error")
        return
    if done.conversation:
        await _redraw(app)
        app.prompt_input.text = checkpoint.prompt
    parts = []
    if code:
        parts.append(f"{len(done.files)} file(s) restored" if done.files else "no file needed restoring")
    if done.conversation:
        parts.append("the conversation is back to before it")
    app.say(f"Rewound to before prompt {checkpoint.index}: {', '.join(parts)}.")


async def _redraw(app: Any) -> None:
    """The view as the stored transcript now has it (a replay leaves out what a rewind cut)."""
    await app.clear_view()
    events = app.session.replay_events(stored=True)
    if events:
        await app.load_history(events)


async def ask_choice(app: Any, screen: ChoiceScreen) -> str | None:
    future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
    app.push_screen(screen, lambda result: future.done() or future.set_result(result))
    return await future
