"""An MCP server's elicitation as a form: the fields its JSON schema asks for, and accept,
decline or cancel (docs/architecture.md §8).

Strings and numbers are inputs, booleans checkboxes, enums selects.  Accept sends the values
once they fit the schema (what does not is said under the form); Esc cancels.  A form the
engine closes (the turn was interrupted) goes away by itself.
"""

from __future__ import annotations

import asyncio
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Select, Static

from ..engine import ElicitationAnswer, ElicitationForm
from ..engine import events as ev


class ElicitationScreen(ModalScreen[ElicitationAnswer | None]):
    """Dismissed with the answer; None when the engine closed the request first."""

    BINDINGS = [
        Binding("escape", "answer('cancel')", "Cancel", id="elicitation.cancel"),
        Binding("ctrl+s", "answer('accept')", "Accept", id="elicitation.accept"),
    ]

    def __init__(self, request: ev.ElicitationRequested) -> None:
        super().__init__()
        self.request = request
        self.form = ElicitationForm.from_schema(request.schema)

    def compose(self) -> ComposeResult:
        request = self.request
        with VerticalScroll(id="elicitation-form"):
            yield Static(f"MCP server {request.server} asks:", id="elicitation-title", markup=False)
            yield Static(request.message, id="elicitation-message", markup=False)
            if request.url is not None:
                yield Static(f"Open: {request.url}", id="elicitation-url", markup=False)
            for field in self.form.fields:
                label = field.title + (" *" if field.required else "")
                if field.description:
                    label += f" — {field.description}"
                if field.kind != "boolean":
                    yield Static(label, classes="elicitation-label", markup=False)
                yield _field_widget(field, label)
            yield Static("", id="elicitation-problem", markup=False)
            with Horizontal(id="elicitation-buttons"):
                yield Button("Accept (Ctrl+S)", id="elicitation-accept", variant="primary")
                yield Button("Decline", id="elicitation-decline")
                yield Button("Cancel (Esc)", id="elicitation-cancel")

    def on_mount(self) -> None:
        future = self.request.future
        if future is not None:
            future.add_done_callback(self._closed_elsewhere)
        inputs = [w for w in self.query("#elicitation-form > *") if w.can_focus]
        if inputs:
            inputs[0].focus()

    def _closed_elsewhere(self, future: asyncio.Future[Any]) -> None:
        if future.cancelled() and self.is_attached:
            self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_answer((event.button.id or "").removeprefix("elicitation-"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in a field goes to the next one, never sends the form."""
        event.stop()
        self.focus_next()

    def action_answer(self, action: str) -> None:
        if action != "accept":
            self.dismiss(ElicitationAnswer("decline" if action == "decline" else "cancel"))
            return
        if self.request.url is not None:
            self.dismiss(ElicitationAnswer("accept"))
            return
        checked = self.form.check(self.values())
        if isinstance(checked, str):
            self.query_one("#elicitation-problem", Static).update(checked)
            return
        self.dismiss(ElicitationAnswer("accept", checked))

    def values(self) -> dict[str, Any]:
        """What the form holds now, by field name (text as typed)."""
        out: dict[str, Any] = {}
        for field in self.form.fields:
            widget = self.query_one(f"#elicit-{field.name}")
            if isinstance(widget, Select):
                out[field.name] = None if widget.value is Select.NULL else widget.value
            else:
                out[field.name] = widget.value
        return out


def _field_widget(field: Any, label: str) -> Input | Checkbox | Select[str]:
    widget_id = f"elicit-{field.name}"
    if field.kind == "boolean":
        return Checkbox(label, value=bool(field.default), id=widget_id)
    if field.kind == "enum":
        default = str(field.default) if field.default is not None else Select.NULL
        return Select([(label_, value) for value, label_ in field.options], value=default,
                      allow_blank=not field.required or field.default is None, id=widget_id)
    kind = {"integer": "integer", "number": "number"}.get(field.kind, "text")
    value = "" if field.default is None else str(field.default)
    return Input(value=value, type=kind, id=widget_id)


def answer_elicitation(app: Any, request: ev.ElicitationRequested) -> None:
    """Show the form for `request`; its answer resolves the request's future."""
    future = request.future
    if future is None or future.done():
        return

    def answered(answer: ElicitationAnswer | None) -> None:
        if answer is not None and not future.done():
            future.set_result(answer)

    app.push_screen(ElicitationScreen(request), answered)
