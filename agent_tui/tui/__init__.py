"""The full-screen front end, built on Textual.

Textual draws a screen at most `TEXTUAL_FPS` times a second (60 unless set),
on a fixed grid of ticks: once a frame has taken longer than a tick (a long
answer arriving at full speed makes such frames), the next one waits for the
next tick however much is ready.  Ticks twice as close halve that wait; how
often text redraws is capped by the answer widget itself (`AssistantText`).
The value is read once, when Textual is first imported (here, before any
other part of the package imports it), and is not passed on to the commands
tools run.  A `TEXTUAL_FPS` set by the user wins.
"""

from __future__ import annotations

import os

if "TEXTUAL_FPS" not in os.environ:
    os.environ["TEXTUAL_FPS"] = "120"
    try:
        import textual.constants  # noqa: F401
    finally:
        del os.environ["TEXTUAL_FPS"]
