"""The permission prompt: a queue of pending requests, answered one key at a time.

Each `permission_requested` event carries a Future; answering resolves it
with a `PermissionAnswer` and the executor carries on.  The engine never
learns which front end answered.  Requests whose Future was settled
elsewhere (an abort cancels them) leave the queue unanswered.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widget import AwaitMount
from textual.widgets import Input, Static

from ...paths import shown_path
from .diff import DiffView

if TYPE_CHECKING:  # requests arrive, and answers go, once the session (and the engine) is there
    from ...engine.events import PermissionRequested

_PREVIEW_KEYS = ("command", "file_path", "path", "pattern", "url")
# Between two answers on the key row.
_KEY_GAP = "   "
# Columns the prompt's margin, border and padding take from the terminal's width.
_CHROME_WIDTH = 6


def key_rows(choices: list[Content], width: int) -> list[Content]:
    """The answers laid out in rows of at most `width` cells, broken between answers (never
    inside one, unless a single answer is wider than the row)."""
    rows: list[list[Content]] = [[]]
    used = 0
    for choice in choices:
        need = choice.cell_length + (len(_KEY_GAP) if rows[-1] else 0)
        if rows[-1] and used + need > width:
            rows.append([])
            used, need = 0, choice.cell_length
        rows[-1].append(choice)
        used += need
    return [Content(_KEY_GAP).join(row) for row in rows]


def describe_input(request: PermissionRequested, cwd: Path) -> str:
    """The command or path a person decides on (paths inside the project relative to it)."""
    data = request.input
    for key in _PREVIEW_KEYS:
        if isinstance(data.get(key), str):
            return shown_path(data[key], cwd) if key in ("file_path", "path") else data[key]
    import json

    return json.dumps(data, ensure_ascii=False)[:500]


class FeedbackInput(Input):
    BINDINGS = [Binding("escape", "cancel", "Back", id="permission.feedback_cancel")]

    class Cancelled(Message):
        """Esc in the feedback box: back to the y / a / n / e answers."""

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())


class PermissionPrompt(Vertical, can_focus=True):
    BINDINGS = [
        Binding("y", "answer('allow')", "Yes", id="permission.allow"),
        Binding("a", "answer('always')", "Yes, don't ask again", id="permission.allow_always"),
        Binding("n", "answer('deny')", "No", id="permission.deny"),
        Binding("e", "feedback", "No, and say why", id="permission.feedback"),
        Binding("down,j", "scroll_body(1)", "Scroll", show=False, id="permission.scroll_down"),
        Binding("up,k", "scroll_body(-1)", "Scroll", show=False, id="permission.scroll_up"),
        Binding("pagedown", "scroll_body(10)", "Page", show=False, id="permission.page_down"),
        Binding("pageup", "scroll_body(-10)", "Page", show=False, id="permission.page_up"),
    ]

    class Settled(Message):
        """The queue is empty again: the input may have its focus back."""

    def __init__(self, cwd: Path, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.cwd = cwd
        self.pending: deque[PermissionRequested] = deque()
        self._mounts: list[AwaitMount] | None = None

    def build(self) -> None:
        """Make the prompt's parts. Not for the first frame (they would slow it by a few
        hundredths of a second): the app calls this once that frame is out."""
        if self._mounts is not None:
            return
        # The command and diff scroll together, so the answer keys below always fit.
        body = VerticalScroll(id="permission-body")
        feedback_row = Vertical(id="permission-feedback-row")
        self._mounts = [
            self.mount(Static("", id="permission-title", markup=False), body,
                       Static("", id="permission-keys", markup=False), feedback_row),
            body.mount(Static("", id="permission-subject", markup=False), DiffView(id="permission-diff")),
            feedback_row.mount(
                FeedbackInput(placeholder="Tell the model what to do instead, then Enter", id="permission-feedback")
            ),
        ]

    async def ready(self) -> None:
        """Return once the parts are mounted (made now if they were not yet), so the first
        request shows whole, never a title without its diff or keys."""
        self.build()
        assert self._mounts is not None
        for mounted in self._mounts:
            await mounted

    def fit(self, width: int, height: int) -> None:
        """Cap the scrolling body so the title, the answer keys and a few lines of the
        transcript stay on screen however small the terminal is."""
        key_lines = self._update_keys(width)
        # header, strip, gauge, footer, input box, this border, title, keys margin, 4 transcript lines
        chrome = 1 + 1 + 1 + 1 + 3 + 2 + 1 + 1 + 4
        room = height - chrome - max(key_lines, 1)
        self.query_one("#permission-body").styles.max_height = max(3, min(room, 20))

    @property
    def current(self) -> PermissionRequested | None:
        return self.pending[0] if self.pending else None

    def push(self, request: PermissionRequested) -> None:
        self.build()
        self.pending.append(request)
        if len(self.pending) == 1:
            self._show()
        else:
            self._update_keys()
        self.app.bell()

    def discard(self, tool_use_id: str) -> None:
        """Forget a request that was settled elsewhere (abort, cancelled sibling)."""
        was_current = self.current is not None and self.current.tool_use_id == tool_use_id
        self.pending = deque(r for r in self.pending if r.tool_use_id != tool_use_id)
        if was_current:
            self._show()
        else:
            self._update_keys()

    def drop_settled(self) -> None:
        """Forget every request whose Future was settled elsewhere."""
        before = self.current
        self._drop_settled()
        if self.current is not before:
            self._show()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("answer", "feedback"):
            if self.current is None or self.query_one("#permission-feedback-row").display:
                return False
            if action == "answer" and parameters == ("always",) and not self.current.suggested_rule:
                return False
        return True

    def action_answer(self, choice: str) -> None:
        if choice == "allow":
            self._resolve("allow")
        elif choice == "always":
            self._resolve("allow", remember=True)
        else:
            self._resolve("deny")

    def action_scroll_body(self, lines: int) -> None:
        body = self.query_one("#permission-body")
        body.scroll_to(y=body.scroll_y + lines, animate=False)

    def action_feedback(self) -> None:
        row = self.query_one("#permission-feedback-row")
        row.display = True
        self.query_one("#permission-keys").display = False
        self.query_one(FeedbackInput).focus()
        self.refresh_bindings()

    def hide_feedback(self) -> None:
        self.query_one("#permission-feedback-row").display = False
        self.query_one("#permission-keys").display = True
        self.query_one(FeedbackInput).value = ""
        self.focus()
        self.refresh_bindings()

    def on_feedback_input_cancelled(self, event: FeedbackInput.Cancelled) -> None:
        event.stop()
        self.hide_feedback()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        self.query_one(FeedbackInput).value = ""
        self.query_one("#permission-feedback-row").display = False
        self.query_one("#permission-keys").display = True
        self._resolve("deny", feedback=text or None)

    def _resolve(self, behavior: str, *, remember: bool = False, feedback: str | None = None) -> None:
        from ...engine.permissions.policy import PermissionAnswer

        request = self.current
        if request is None:
            return
        answer = PermissionAnswer(behavior, remember=remember, feedback=feedback)
        self.pending.popleft()
        if request.future is not None and not request.future.done():
            request.future.set_result(answer)
        self._show()

    def _show(self) -> None:
        self._drop_settled()
        request = self.current
        if request is None:
            was_shown = self.display
            self.display = False
            if was_shown:
                self.post_message(self.Settled())
            return
        self.display = True
        title: list[tuple[str, str] | str] = [
            ("⚠ Permission needed  ", "$text-warning bold"),
            (request.tool_name, "bold"),
            "  ",
            (request.message, "$text-muted"),
        ]
        if request.danger:
            title += ["\n", (f"⚠ DANGER: {request.danger}", "$text-error bold")]
        self.query_one("#permission-title", Static).update(Content.assemble(*title))
        self.query_one("#permission-subject", Static).update(
            Content.styled(describe_input(request, self.cwd), "$text-secondary")
        )
        diff = self.query_one(DiffView)
        if request.diff:
            diff.show_diff(request.diff)
        diff.display = bool(request.diff)
        self.query_one("#permission-body").scroll_home(animate=False)
        self.set_class(bool(request.danger), "-danger")
        self.fit(*self.app.size)
        self.query_one("#permission-feedback-row").display = False
        self.query_one("#permission-keys").display = True
        self.focus()
        self.refresh_bindings()

    def _drop_settled(self) -> None:
        self.pending = deque(r for r in self.pending if r.future is None or not r.future.done())

    def _update_keys(self, width: int | None = None) -> int:
        """Show the answer keys for a terminal `width` columns wide (the app's by default);
        the number of rows they take."""
        request = self.current
        if request is None:
            return 1
        choices = [Content.assemble(("y", "$text-success bold"), " yes")]
        if request.suggested_rule:
            choices.append(
                Content.assemble(("a", "$text-success bold"), f" yes, and don't ask again for {request.suggested_rule}")
            )
        choices.append(Content.assemble(("n", "$text-error bold"), " no"))
        choices.append(Content.assemble(("e", "$text-warning bold"), " no, and tell the model why"))
        if len(self.pending) > 1:
            choices.append(Content.styled(f"(1 of {len(self.pending)} pending)", "$text-muted"))
        columns = max((width if width is not None else self.app.size.width) - _CHROME_WIDTH, 1)
        rows = key_rows(choices, columns)
        self.query_one("#permission-keys", Static).update(Content("\n").join(rows))
        # A row holding one answer wider than the prompt still wraps.
        return sum(max(-(-row.cell_length // columns), 1) for row in rows)
