"""`-p` on a terminal: retries rewrite one stderr line; piped, each is a line of its own."""

from __future__ import annotations

import io

from agent_tui.engine import events as ev
from agent_tui.printer import RetryLine


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def retry(n: int) -> ev.Notice:
    return ev.Notice(kind="retry", message=f"API overloaded; retrying in 1.0s (attempt {n}/10)")


def test_on_a_terminal_one_retry_after_another_rewrites_one_line():
    err = Terminal()
    line = RetryLine(err)
    for n in (1, 2, 3):
        line(retry(n))
    line(ev.Notice(kind="info", message="not a retry"))
    line.close()
    assert err.getvalue() == "".join(
        f"\r\x1b[2Kagent-tui: API overloaded; retrying in 1.0s (attempt {n}/10)" for n in (1, 2, 3)) + "\n"


def test_a_fallback_ends_the_retry_line_and_stands_on_its_own():
    err = Terminal()
    line = RetryLine(err)
    line(retry(1))
    line(ev.Notice(kind="fallback", message="Switched to claude-fallback"))
    line.close()
    assert err.getvalue().endswith("(attempt 1/10)\nagent-tui: Switched to claude-fallback\n")


def test_piped_each_retry_is_a_line():
    err = io.StringIO()
    line = RetryLine(err)
    line(retry(1))
    line(retry(2))
    line.close()
    assert err.getvalue().splitlines() == [
        "agent-tui: API overloaded; retrying in 1.0s (attempt 1/10)",
        "agent-tui: API overloaded; retrying in 1.0s (attempt 2/10)",
    ]
