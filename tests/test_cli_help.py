"""The command line's own words: an unknown flag gets one line and a pointer to --help; --help
names the environment variables and the keys."""

from __future__ import annotations

import pytest

from agent_tui.cli import main


def test_an_unknown_flag_prints_one_line_and_a_pointer_to_help(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--no-such-flag"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines() == ["agent-tui: unrecognized arguments: --no-such-flag", "agent-tui --help lists the flags."]


def test_help_names_the_keys_variables_and_the_keys(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for word in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "Ctrl+J", "Shift+Tab", "Ctrl+O"):
        assert word in out, word
