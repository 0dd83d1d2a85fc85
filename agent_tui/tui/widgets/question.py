"""AskUserQuestion in the permission prompt: one question at a time, answered with keys.

The prompt (`widgets/permission.py`) keeps its queue and its arming (keys typed before a
question could be read never answer it) and hands a question request to a `QuestionForm`:
`1`-`4` pick an option (toggle it, for a multi-select question, and Enter confirms), `o`
types an answer of one's own ("Other"), `n` declines.  When the last question is answered
the form's `answers` (question text -> label, labels joined by ", ", or the typed text) go
back as the allow's `updated_input`, which the tool hands to the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.content import Content

from ..safe_text import reveal_hidden

QUESTION_TOOL = "AskUserQuestion"


@dataclass
class QuestionForm:
    questions: list[dict[str, Any]]
    index: int = 0
    # The options ticked in the current multi-select question.
    ticked: set[int] = field(default_factory=set)
    answers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, input: dict[str, Any]) -> QuestionForm:
        return cls([q for q in input.get("questions", []) if isinstance(q, dict)])

    @property
    def current(self) -> dict[str, Any]:
        return self.questions[self.index]

    @property
    def done(self) -> bool:
        return self.index >= len(self.questions)

    @property
    def multi(self) -> bool:
        return not self.done and bool(self.current.get("multiSelect"))

    def options(self) -> list[dict[str, Any]]:
        return [o for o in self.current.get("options", []) if isinstance(o, dict)]

    def choose(self, number: int) -> bool:
        """Option `number` (0-based) pressed: ticked or unticked (multi-select), else the answer.
        False when there is no such option."""
        options = self.options()
        if self.done or not 0 <= number < len(options):
            return False
        if self.multi:
            self.ticked ^= {number}
        else:
            self._answer(str(options[number].get("label", "")))
        return True

    def confirm(self) -> bool:
        """Enter on a multi-select question: the ticked labels are the answer (at least one)."""
        if not self.multi or not self.ticked:
            return False
        options = self.options()
        self._answer(", ".join(str(options[i].get("label", "")) for i in sorted(self.ticked)))
        return True

    def other(self, text: str) -> bool:
        """The person's own answer ("Other")."""
        if self.done or not text.strip():
            return False
        self._answer(text.strip())
        return True

    def updated_input(self, input: dict[str, Any]) -> dict[str, Any]:
        return {**input, "answers": dict(self.answers)}

    def _answer(self, text: str) -> None:
        self.answers[str(self.current.get("question", ""))] = text
        self.index += 1
        self.ticked = set()

    # ------------------------------------------------------------ drawing

    def title(self) -> Content:
        count = f"  ({self.index + 1} of {len(self.questions)})" if len(self.questions) > 1 else ""
        header = str(self.current.get("header", "")) if not self.done else ""
        return Content.assemble(
            ("? Question  ", "$text-primary bold"), reveal_hidden(header, "bold"), (count, "$text-muted"))

    def body(self) -> Content:
        """The question, its options numbered, and "Other"."""
        if self.done:
            return Content("")
        lines = [reveal_hidden(str(self.current.get("question", "")), "bold")]
        for number, option in enumerate(self.options()):
            mark = ("[x] " if number in self.ticked else "[ ] ") if self.multi else ""
            line = Content.assemble((f"{number + 1}. ", "$text-primary bold"), mark,
                                    reveal_hidden(str(option.get("label", ""))))
            if option.get("description"):
                line += Content.assemble(("  ", ""), reveal_hidden(str(option["description"]), "$text-muted"))
            lines.append(line)
        lines.append(Content.assemble(("o. ", "$text-primary bold"), ("Other: type your own answer", "$text-muted")))
        return Content("\n").join(lines)

    def keys(self, armed: bool) -> list[Content]:
        def choice(key: str, label: str, style: str = "$text-primary bold") -> Content:
            return Content.assemble((key, style if armed else "$text-muted"), (label, "" if armed else "$text-muted"))

        count = len(self.options())
        numbers = "1" if count == 1 else f"1-{count}"
        row = [choice(numbers, " tick" if self.multi else " choose")]
        if self.multi:
            row.append(choice("enter", " done" if self.ticked else " done (tick one first)"))
        row += [choice("o", " other"), choice("n", " decline", "$text-error bold")]
        return row
