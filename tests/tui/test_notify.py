"""Notification sequences per channel, and inside tmux."""

from __future__ import annotations

from agent_tui.tui.notify import BEL, osc9, osc99, osc777, sequences, tmux_passthrough

OUTSIDE: dict[str, str] = {}
IN_TMUX = {"TMUX": "/tmp/tmux-0/default,1,0", "TERM_PROGRAM": "tmux"}


def test_each_channel_writes_its_sequences_and_bell():
    assert sequences("osc9", "t", "b", OUTSIDE) == osc9("t", "b")
    assert sequences("ghostty", "t", "b", OUTSIDE) == osc777("t", "b") + BEL
    assert sequences("kitty", "t", "b", OUTSIDE) == osc99("t", "b") + BEL
    assert sequences("terminal_bell", "t", "b", OUTSIDE) == BEL
    assert sequences("notifications_disabled", "t", "b", OUTSIDE) == ""
    assert sequences("auto", "t", "b", OUTSIDE) == osc9("t", "b") + osc777("t", "b") + BEL


def test_inside_tmux_the_notification_passes_through_and_the_bell_stays_plain():
    wrapped = sequences("auto", "agent-tui", "Done", IN_TMUX)
    assert wrapped == tmux_passthrough(osc9("agent-tui", "Done") + osc777("agent-tui", "Done")) + BEL
    assert wrapped.startswith("\x1bPtmux;\x1b\x1b]9;agent-tui: Done")
    # Every ESC inside is doubled, so tmux ends the passthrough only at the final ST.
    body = wrapped[len("\x1bPtmux;"):-len("\x1b\\" + BEL)]
    assert "\x1b" not in body.replace("\x1b\x1b", "")
    assert sequences("terminal_bell", "t", "b", IN_TMUX) == BEL
    assert sequences("kitty", "t", "b", IN_TMUX) == tmux_passthrough(osc99("t", "b")) + BEL
