"""The permission prompt: a queue of pending requests, answered one key at a time.

Each `permission_requested` event carries a Future; answering resolves it
with a `PermissionAnswer` and the executor carries on.  The engine never
learns which front end answered.  Requests whose Future was settled
elsewhere (an abort cancels them) leave the queue unanswered.

A prompt arms before it takes an answer: the model picks the moment it appears, often
while a person is typing, so keys in flight or typed just after it showed must never
answer it.  It arms once `ARM_QUIET` seconds have passed since the later of its first
draw and the last key pressed anywhere in the app; until then the input keeps its focus
(the letters go on landing there) and the answer row is dimmed with an "arming…" hint.
Keys the app has not handled yet are in flight too: a check that runs `LATE` seconds after it
was due (the app was busy, and keys typed meanwhile may be queued behind it), or that finds bytes
waiting on the terminal's input, looks again `IN_FLIGHT_AGAIN` seconds later instead of arming.
`a`, which writes a rule, also needs the prompt to have been on screen `ALWAYS_SHOWN`
seconds.
"""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widget import AwaitMount
from textual.widgets import Input, Static

from ...paths import shown_path
from ..safe_text import has_hidden, reveal_hidden
from .diff import DiffView
from .question import QUESTION_TOOL, QuestionForm

if TYPE_CHECKING:  # requests arrive, and answers go, once the session (and the engine) is there
    from textual.timer import Timer

    from ...engine.events import PermissionRequested

# Seconds without a key press, counted from the prompt's first draw, before it takes answers.
ARM_QUIET = 0.5
# Seconds the prompt must have been on screen before `a` (which saves a rule) answers it.
ALWAYS_SHOWN = 1.0
# An arming check this many seconds late does not arm (keys may be queued behind what kept the app
# busy); it looks again after `IN_FLIGHT_AGAIN` seconds, up to `IN_FLIGHT_TRIES` times in a row.
LATE = 0.1
IN_FLIGHT_AGAIN = 0.05
IN_FLIGHT_TRIES = 20
# One row at 80 columns: why a command with hidden characters offers no `a`.
NO_RULE_REASON = "No \"don't ask again\": the command holds hidden characters (marked <U+…>)"

_PREVIEW_KEYS = ("command", "file_path", "path", "pattern", "url", "plan")
# The tool whose prompt approves a plan: its answers read differently (`tools/exit_plan.py`).
PLAN_EXIT = "ExitPlanMode"
# Below this many rows the terminal is short: a prompt takes the rows of the timeline strip, the
# gauge and the footer, and its title and answers take one row each (`fit`).
COMPACT_HEIGHT = 22
# Between two answers on the key row.
_KEY_GAP = "   "
# Columns the prompt's margin, border and padding take from the terminal's width.
_CHROME_WIDTH = 6


def key_rows(choices: list[Content], width: int, gap: str = _KEY_GAP) -> list[Content]:
    """The answers laid out in rows of at most `width` cells, broken between answers (never
    inside one, unless a single answer is wider than the row)."""
    rows: list[list[Content]] = [[]]
    used = 0
    for choice in choices:
        need = choice.cell_length + (len(gap) if rows[-1] else 0)
        if rows[-1] and used + need > width:
            rows.append([])
            used, need = 0, choice.cell_length
        rows[-1].append(choice)
        used += need
    return [Content(gap).join(row) for row in rows]


def bash_description(request: PermissionRequested) -> str:
    """What the model says a Bash command does (its `description`), for the prompt's title."""
    description = request.input.get("description") if request.tool_name == "Bash" else None
    return " ".join(description.split()) if isinstance(description, str) else ""


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
    # The answers are on the prompt's own key row: the footer keeps the app's keys, uncut.
    BINDINGS = [
        Binding("y", "answer('allow')", "Yes", show=False, id="permission.allow"),
        Binding("a", "answer('always')", "Yes, don't ask again", show=False, id="permission.allow_always"),
        Binding("n", "answer('deny')", "No", show=False, id="permission.deny"),
        Binding("e", "feedback", "No, and say why", show=False, id="permission.feedback"),
        Binding("1", "choose(0)", "Option 1", show=False, id="question.option_1"),
        Binding("2", "choose(1)", "Option 2", show=False, id="question.option_2"),
        Binding("3", "choose(2)", "Option 3", show=False, id="question.option_3"),
        Binding("4", "choose(3)", "Option 4", show=False, id="question.option_4"),
        Binding("enter", "confirm_ticked", "Done", show=False, id="question.confirm"),
        Binding("o", "other", "Other answer", show=False, id="question.other"),
        Binding("down,j", "scroll_body(1)", "Scroll", show=False, id="permission.scroll_down"),
        Binding("up,k", "scroll_body(-1)", "Scroll", show=False, id="permission.scroll_up"),
        Binding("pagedown", "scroll_body(10)", "Page", show=False, id="permission.page_down"),
        Binding("pageup", "scroll_body(-10)", "Page", show=False, id="permission.page_up"),
    ]

    # The arming times (tests shorten them here).
    arm_quiet: ClassVar[float] = ARM_QUIET
    always_shown: ClassVar[float] = ALWAYS_SHOWN

    class Settled(Message):
        """The queue is empty again: the input may have its focus back."""

    def __init__(self, cwd: Path, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.cwd = cwd
        self.pending: deque[PermissionRequested] = deque()
        self._mounts: list[AwaitMount] | None = None
        # The request being armed or answered, when it was first drawn, and how far it has armed.
        self._shown: PermissionRequested | None = None
        self._drawn_at: float | None = None
        self._armed = False
        self._always_armed = False
        self._arm_timer: Timer | None = None
        self._arm_due = 0.0  # when the pending arming check was due
        self._in_flight_tries = 0
        # The question request being answered and its answers so far (AskUserQuestion).
        self._form: QuestionForm | None = None
        self._form_request: PermissionRequested | None = None
        self._title = Content("")
        # The rows the answer keys may take before shorter words are used (`fit`).
        self._key_rows_max = 2

    def build(self) -> None:
        """Make the prompt's parts. Not for the first frame (they would slow it by a few
        hundredths of a second): the app calls this once that frame is out."""
        if self._mounts is not None:
            return
        # The command and diff scroll together, so the answer keys below always fit.
        body = VerticalScroll(id="permission-body")
        self.watch(body, "scroll_y", lambda _y: self._update_more(), init=False)
        feedback_row = Vertical(id="permission-feedback-row")
        self._mounts = [
            self.mount(Static("", id="permission-title", markup=False), body,
                       Static("", id="permission-keys", markup=False), feedback_row),
            body.mount(Static("", id="permission-subject", markup=False),
                       DiffView(start_at_change=True, id="permission-diff")),
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

    def fit(self, width: int, room: int, *, compact: bool = False) -> None:
        """Lay the prompt out in `room` rows of a terminal `width` columns wide: the title and the
        answer keys always whole, the scrolling body taking what is left. `compact` (a short
        terminal): no blank rows, a one-row title and the answers on one row, in short words."""
        self.set_class(compact, "-compact")
        key_lines = self._update_keys(width, max_rows=1 if compact else 2)
        columns = max(width - _CHROME_WIDTH, 1)
        title = self._title.split("\n")
        title_lines = len(title) if compact else sum(max(-(-line.cell_length // columns), 1) for line in title)
        # the border (saying "N more lines"), the title, the blank row above the keys (not when compact), the keys
        body = room - 2 - title_lines - (0 if compact else 1) - key_lines
        self.query_one("#permission-body").styles.max_height = max(1, min(body, 20))
        self.call_after_refresh(self._update_more)

    def _refit(self) -> None:
        """Lay the prompt out again; the app decides how many rows it gets (`apply_layout`)."""
        apply_layout = getattr(self.app, "apply_layout", None)
        if apply_layout is not None:
            apply_layout()
        else:
            self.fit(self.app.size.width, self.app.size.height)

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

    @property
    def armed(self) -> bool:
        """Whether the current request takes y / n / e now."""
        return self._armed

    @property
    def always_armed(self) -> bool:
        """Whether it takes `a` now (when it offers a rule)."""
        return self._always_armed

    def offers_always(self, request: PermissionRequested | None = None) -> bool:
        """Whether `a` is offered: there is a rule, and neither it nor the command holds
        characters that would make the rule read as something else."""
        request = request or self.current
        if request is not None and request.tool_name == PLAN_EXIT:
            return True  # `a`: approve the plan and auto-accept edits (no rule is written)
        if request is None or not request.suggested_rule:
            return False
        return not (has_hidden(request.suggested_rule) or has_hidden(describe_input(request, self.cwd)))

    @property
    def question(self) -> QuestionForm | None:
        """The form of the question request on show (None: not a question)."""
        request = self.current
        if request is None or request.tool_name != QUESTION_TOOL:
            return None
        if self._form is None or self._form_request is not request:
            self._form, self._form_request = QuestionForm.of(request.input), request
        return self._form

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("answer", "feedback", "choose", "confirm_ticked", "other"):
            if self.current is None or self.query_one("#permission-feedback-row").display:
                return False
            asking = self.question is not None
            if asking != (action in ("choose", "confirm_ticked", "other")) and parameters != ("deny",):
                return False  # a question takes numbers, o and n; a permission y / a / n / e
            always = action == "answer" and parameters == ("always",)
            if always and not self.offers_always():
                return False
            if not self._armed or (always and not self._always_armed):
                return None  # arming: shown, dimmed, refused
        return True

    def action_answer(self, choice: str) -> None:
        if choice == "allow":
            self._resolve("allow")
        elif choice == "always":
            self._resolve("allow", remember=True)
        else:
            self._resolve("deny")

    def action_choose(self, number: int) -> None:
        form = self.question
        if form is not None and self._armed and form.choose(number):
            self._after_question()

    def action_confirm_ticked(self) -> None:
        form = self.question
        if form is not None and self._armed and form.confirm():
            self._after_question()

    def action_other(self) -> None:
        self.action_feedback()

    def _after_question(self) -> None:
        """The next question, or, once all are answered, the answers go back as the allow's input."""
        form, request = self.question, self.current
        if form is None or request is None:
            return
        if not form.done:
            self._show()
            return
        from ...engine import PermissionAnswer

        self.pending.popleft()
        if request.future is not None and not request.future.done():
            request.future.set_result(PermissionAnswer("allow", updated_input=form.updated_input(request.input)))
        self._show()

    def action_scroll_body(self, lines: int) -> None:
        body = self.query_one("#permission-body")
        body.scroll_to(y=body.scroll_y + lines, animate=False)

    def action_feedback(self) -> None:
        row = self.query_one("#permission-feedback-row")
        self.query_one(FeedbackInput).placeholder = (
            "Type your answer, then Enter (Esc: back to the options)" if self.question is not None
            else "Tell the model what to do instead, then Enter")
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
        form = self.question
        if form is not None:
            if self._armed and form.other(text):
                self._after_question()
            else:
                self.focus()
                self.refresh_bindings()
            return
        self._resolve("deny", feedback=text or None)

    def _resolve(self, behavior: str, *, remember: bool = False, feedback: str | None = None) -> None:
        from ...engine import PermissionAnswer

        request = self.current
        if request is None or not self._armed or (remember and not (self._always_armed and self.offers_always())):
            return
        if request.tool_name == PLAN_EXIT and behavior == "allow":
            # y: approve, and ask before edits (the tool ends plan mode); a: approve and auto-accept edits
            session = getattr(self.app, "session", None)
            if remember and session is not None:
                session.set_permission_mode("acceptEdits")
            remember = False
        answer = PermissionAnswer(behavior, remember=remember, feedback=feedback)
        self.pending.popleft()
        if request.future is not None and not request.future.done():
            request.future.set_result(answer)
        self._show()

    def _show(self) -> None:
        self._drop_settled()
        request = self.current
        if request is not self._shown:
            self._start_arming(request)
        if request is None:
            was_shown = self.display
            self.display = False
            if was_shown:
                self._refit()  # the rows a short terminal gave the prompt go back
                self.post_message(self.Settled())
            return
        self.display = True
        if request.tool_name == QUESTION_TOOL:
            self._show_question(request)
            return
        plan_exit = request.tool_name == PLAN_EXIT
        subject = describe_input(request, self.cwd)
        lead = "◆ Plan ready  " if plan_exit else "⚠ Permission needed  "
        if self.app.size.height < COMPACT_HEIGHT:  # one row: the tool and its file come first
            lead = lead[:2]
        title: list[Content] = [
            Content.styled(lead, "$text-primary bold" if plan_exit else "$text-warning bold"),
            reveal_hidden(request.tool_name, "bold"),
        ]
        if request.diff:  # the file's name goes up here: the body's rows are the diff's
            title += [Content(" "), reveal_hidden(subject, "$text-secondary")]
        title += [Content("  "), reveal_hidden(bash_description(request) or request.message, "$text-muted")]
        if request.danger:
            title += [Content("\n"), reveal_hidden(f"⚠ DANGER: {request.danger}", "$text-error bold")]
        self._set_title(Content("").join(title))
        subject_view = self.query_one("#permission-subject", Static)
        subject_view.update(reveal_hidden(subject, "" if plan_exit else "$text-secondary"))
        subject_view.display = not request.diff
        diff = self.query_one(DiffView)
        if request.diff:
            diff.show_diff(request.diff)
        diff.display = bool(request.diff)
        self._laid_out(danger=bool(request.danger))

    def _set_title(self, title: Content) -> None:
        self._title = title
        self.query_one("#permission-title", Static).update(title)

    def _show_question(self, request: PermissionRequested) -> None:
        form = self.question
        assert form is not None
        self._set_title(form.title())
        subject = self.query_one("#permission-subject", Static)
        subject.update(form.body())
        subject.display = True
        self.query_one(DiffView).display = False
        self._laid_out(danger=False)

    def _laid_out(self, *, danger: bool) -> None:
        """The shown request's body from its top, the answer keys in view, focus once armed."""
        self.query_one("#permission-body").scroll_home(animate=False)
        self.set_class(danger, "-danger")
        self._refit()
        self.query_one("#permission-feedback-row").display = False
        self.query_one("#permission-keys").display = True
        if self._armed:
            self.focus()
        self.refresh_bindings()

    # ------------------------------------------------------------ arming

    def _start_arming(self, request: PermissionRequested | None) -> None:
        self._shown = request
        self._drawn_at = None
        self._armed = self._always_armed = False
        self._arm_due, self._in_flight_tries = 0.0, 0
        if self._arm_timer is not None:
            self._arm_timer.stop()
            self._arm_timer = None
        if request is not None:
            self.call_after_refresh(self._first_drawn, request)

    def _first_drawn(self, request: PermissionRequested) -> None:
        if self._shown is request and self._drawn_at is None:
            self._drawn_at = time.monotonic()
            self._check_arming()

    def _check_arming(self) -> None:
        """Arm as far as the times allow; else look again when the next step is due."""
        self._arm_timer = None
        if self._shown is None or self._shown is not self.current or self._drawn_at is None:
            return
        now = time.monotonic()
        last_key = getattr(self.app, "last_key_at", float("-inf"))
        arms_at = max(self._drawn_at, last_key) + self.arm_quiet
        always_at = max(arms_at, self._drawn_at + self.always_shown)
        was = (self._armed, self._always_armed)
        if now >= arms_at and not self._armed and self._keys_in_flight(now):
            self._arm_due = now + IN_FLIGHT_AGAIN
            self._arm_timer = self.set_timer(IN_FLIGHT_AGAIN, self._check_arming)
            return
        self._in_flight_tries = 0
        # Armed stays armed: from then on the keys are meant for the prompt.
        self._armed = self._armed or now >= arms_at
        self._always_armed = self._armed and now >= always_at
        if (self._armed, self._always_armed) != was:
            self._refit()  # the key rows may take one row fewer without the hint
            if self._armed and not was[0] and not self.query_one("#permission-feedback-row").display:
                self.focus()
            self.refresh_bindings()
        if not self._always_armed:
            self._arm_due = max(always_at if self._armed else arms_at, now + 0.01)
            self._arm_timer = self.set_timer(self._arm_due - now, self._check_arming)

    def _keys_in_flight(self, now: float) -> bool:
        """Whether keys may have been typed that the app has not handled yet: this check ran late,
        or the terminal's input holds unread bytes.  After `IN_FLIGHT_TRIES` looks in a row, no."""
        if self._in_flight_tries >= IN_FLIGHT_TRIES:
            return False
        late = self._arm_due and now - self._arm_due > LATE
        waiting = getattr(self.app, "keys_waiting", None)
        if late or (waiting is not None and waiting()):
            self._in_flight_tries += 1
            return True
        return False

    def _update_more(self) -> None:
        """Say "N more lines (↓ scrolls)" when the command or diff goes on below the visible part."""
        if not self.is_mounted or self._mounts is None:
            return
        body = self.query_one("#permission-body", VerticalScroll)
        hidden = max(0, round(body.max_scroll_y - body.scroll_y)) if self.current is not None else 0
        # On the bottom border, right under the answers: the body's rows all go to what is asked.
        lines = "line" if hidden == 1 else "lines"
        self.border_subtitle = f"{hidden} more {lines} (↓ scrolls)" if hidden else ""

    def _drop_settled(self) -> None:
        self.pending = deque(r for r in self.pending if r.future is None or not r.future.done())

    def _update_keys(self, width: int | None = None, max_rows: int | None = None) -> int:
        """Show the answer keys for a terminal `width` columns wide (the app's by default), in
        words short enough for `max_rows` rows when the full ones take more; the rows they take."""
        request = self.current
        if request is None:
            return 1
        if max_rows is not None:
            self._key_rows_max = max_rows
        armed = self._armed

        def choice(key: str, style: str, label: str | Content, ready: bool = armed) -> Content:
            if not ready:  # dimmed until the prompt arms
                return Content.assemble((key, "$text-muted"), (label, "$text-muted") if isinstance(label, str) else
                                        label.stylize("$text-muted"))
            return Content.assemble((key, style), label)

        offers_always = self.offers_always(request)
        form = self.question
        if form is not None and not form.done:
            return self._show_keys([form.keys(armed)], width)
        if request.tool_name == PLAN_EXIT:
            tiers = [[
                choice("y", "$text-success bold", yes),
                choice("a", "$text-success bold", always, self._always_armed),
                choice("n", "$text-error bold", no),
                choice("e", "$text-warning bold", why),
            ] for yes, always, no, why in (
                (" approve, ask before edits", " approve, auto-accept edits", " keep planning",
                 " keep planning, say what to change"),
                (" approve", " auto-accept", " keep planning", " say what"),
            )]
            return self._show_keys(tiers, width)
        rule = reveal_hidden(request.suggested_rule or "")
        # Full words; then short ones keeping the rule `a` saves; then short ones.
        labels = ((Content(" yes, and don't ask again for ") + rule, " no, and tell the model why", "1 of {}"),
                  (Content(" always ") + rule, " say why", "1/{}"), (Content(" always"), " say why", "1/{}"))
        tiers = []
        for always, why, pending in labels:
            choices = [choice("y", "$text-success bold", " yes")]
            if offers_always:
                choices.append(choice("a", "$text-success bold", always, self._always_armed))
            choices += [choice("n", "$text-error bold", " no"), choice("e", "$text-warning bold", why)]
            if len(self.pending) > 1:
                choices.append(Content.styled(f"({pending.format(len(self.pending))} pending)", "$text-muted"))
            tiers.append(choices)
        reason = NO_RULE_REASON if not offers_always and has_hidden(describe_input(request, self.cwd)) else None
        return self._show_keys(tiers, width, reason)

    def _show_keys(self, tiers: list[list[Content]], width: int | None, reason: str | None = None) -> int:
        """Lay the first of `tiers` (the same answers in ever shorter words) that fits the rows allowed
        out in rows for `width` columns (plus the arming hint, and `reason` on a row of its own); the
        number of rows they take."""
        columns = max((width if width is not None else self.app.size.width) - _CHROME_WIDTH, 1)
        for tier, choices in enumerate(tiers):
            if not self._armed:
                choices = [*choices, Content.styled("arming…", "$text-muted italic")]
            rows = key_rows(choices, columns, gap=_KEY_GAP if tier == 0 else "  ")
            # A row holding one answer wider than the prompt still wraps.
            count = sum(max(-(-row.cell_length // columns), 1) for row in rows)
            if count <= self._key_rows_max:
                break
        if reason:
            rows.append(Content.styled(reason, "$text-warning"))
            count += max(-(-len(reason) // columns), 1)
        self.query_one("#permission-keys", Static).update(Content("\n").join(rows))
        return count
