"""The installed `agent-tui` in tmux: newlines in the input (`\\` then Enter), a 200-line paste
folded into one token and sent whole, and the permission mode beside the input after Shift+Tab."""

from __future__ import annotations

import time

from tests.bench.trees import fifty_thousand_files
from tests.loopback import reply, text

from .test_tmux import _launch, agent, prompt_sent, pytestmark, small_agent  # noqa: F401  (fixtures, the tmux skip)

INPUT_BOTTOM = "╰"


def _input_box(shown: str) -> list[str]:
    """The input box's rows (its top border, text rows, bottom border), the last box on screen."""
    lines = shown.splitlines()
    bottom = max(n for n, line in enumerate(lines) if line.lstrip().startswith(INPUT_BOTTOM))
    top = max(n for n in range(bottom) if lines[n].lstrip().startswith("╭"))
    return lines[top:bottom + 1]


def test_backslash_then_enter_is_a_newline_and_enter_sends_both_lines(agent):  # noqa: F811 (the fixture)
    tmux, srv = agent.tmux, agent.api
    srv.push(reply(text("Two lines received.")))
    tmux.type("first line \\")
    tmux.wait_for("first line \\")
    tmux.press("Enter")
    # The backslash became a line break: the box holds two rows and nothing was sent.
    tmux.wait_for(lambda s: any("first line" in row and "\\" not in row for row in _input_box(s)))
    tmux.type("second line")
    box = _input_box(tmux.wait_for("second line"))
    assert [row for row in box if "line" in row][0].split("│")[1].strip() == "first line"
    assert not srv.requests
    tmux.press("Enter")
    tmux.wait_for("Two lines received.")
    assert prompt_sent(srv.requests[0].body) == ["first line \nsecond line"]


def test_a_200_line_paste_shows_as_one_token_and_is_sent_whole(agent, tmp_path):  # noqa: F811 (the fixture)
    tmux, srv = agent.tmux, agent.api
    srv.push(reply(text("All 200 lines arrived.")))
    pasted = "".join(f"log line {n}: value={n * 7}\n" for n in range(1, 201))
    buffer = tmp_path / "paste.txt"
    buffer.write_text(pasted)
    tmux.type("explain this log: ")
    tmux.wait_for("explain this log:")
    tmux.run("load-buffer", "-b", "log", str(buffer))
    tmux.run("paste-buffer", "-p", "-b", "log", "-t", "agent")  # -p: as a bracketed paste, as terminals do
    box = _input_box(tmux.wait_for("[Pasted 200 lines]"))
    assert not any("log line" in row for row in box)  # folded: the box shows the token, not the lines
    tmux.type(" thanks")
    tmux.wait_for("[Pasted 200 lines] thanks")
    tmux.press("Enter")
    tmux.wait_for("All 200 lines arrived.")
    assert prompt_sent(srv.requests[0].body) == ["explain this log: " + pasted + " thanks"]


def test_shift_tab_shows_the_new_mode_beside_the_input_at_80_columns(small_agent):  # noqa: F811 (the fixture)
    tmux = small_agent.tmux
    box = _input_box(tmux.screen())
    assert "ask before changes" in box[-1]  # on the box's bottom edge, not only in the header
    tmux.press("BTab")
    tmux.wait_for(lambda s: "accept edits" in _input_box(s)[-1])
    tmux.wait_for("Permission mode: accept edits")  # and it says so
    tmux.press("BTab")
    tmux.wait_for(lambda s: "plan mode" in _input_box(s)[-1])
    tmux.press("BTab")
    tmux.wait_for(lambda s: "ask before changes" in _input_box(s)[-1])


def test_fuzzy_at_finds_a_file_in_a_50000_file_tree_and_leaves_out_ignored_ones(tmp_path, capsys):
    fifty_thousand_files(tmp_path / "project")
    with _launch(tmp_path, (120, 40)) as started:
        _find_discount_rules(started.tmux, capsys)


def _find_discount_rules(tmux, capsys) -> None:
    # The file list is read after the first frame; a first search shows it is there.
    tmux.type("@mod_views_auth_3")
    tmux.wait_for("@pkg/views/auth/mod_views_auth_3.py", timeout=30)
    tmux.press("C-u")  # the line typed so far, gone
    tmux.wait_for(lambda s: "mod_views_auth_3" not in s)

    # Whole words, and characters in order ("discrules"), which a search thread answers. How soon
    # is the benchmark's to say (`bench_tui --only fuzzy`, beside Claude Code): here it is printed.
    for word, path in (("discount", "pkg/pricing/orders/discount_rules.py"),
                       ("users_auth_12", "pkg/users/auth/mod_users_auth_12.py"),
                       ("discrules", "pkg/pricing/orders/discount_rules.py"),
                       ("billing_docs_7", "pkg/billing/docs/mod_billing_docs_7.py")):
        pressed = time.monotonic()
        tmux.type(f"@{word}")
        shown = tmux.wait_for(f"@{path}", timeout=10, every=0.01)
        with capsys.disabled():
            print(f"\nfuzzy @{word} in 50,000 files: {(time.monotonic() - pressed) * 1000:.0f} ms to its first result")
        assert "build/discount_rules.py" not in shown  # .gitignore respected
        tmux.press("C-u")
        tmux.wait_for(lambda s, word=word: not any(word in row for row in _input_box(s)))
