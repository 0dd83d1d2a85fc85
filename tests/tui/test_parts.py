"""The TUI's plain-Python parts: the bridge's delta merging, answer segments,
frozen Markdown, themes as data, and the no-raw-colours rule for TCSS."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_tui.engine import events as ev
from agent_tui.tui.bridge import merge_deltas
from agent_tui.tui.segments import SegmentSplitter
from agent_tui.tui.themes import BUILTIN_DIR, ThemeFileError, load_theme, load_themes
from agent_tui.tui.widgets.markdown_lite import render_markdown

TUI = Path(__file__).resolve().parents[2] / "agent_tui" / "tui"


def test_merge_deltas_joins_runs_of_one_block_and_keeps_every_other_event():
    batch = [
        ev.TextDelta(index=0, text="Hel"),
        ev.TextDelta(index=0, text="lo"),
        ev.ToolQueued(tool_use_id="t1", name="Read", input={}, summary="", concurrency_safe=True),
        ev.TextDelta(index=0, text=" again"),
        ev.TextDelta(index=1, text="next block"),
        ev.ThinkingDelta(index=2, text="hm"),
        ev.ThinkingDelta(index=2, text="m"),
    ]
    merged = merge_deltas(batch)
    assert [type(e).__name__ for e in merged] == ["TextDelta", "ToolQueued", "TextDelta", "TextDelta", "ThinkingDelta"]
    assert merged[0].text == "Hello"
    assert merged[2].text == " again" and merged[3].text == "next block"
    assert merged[4].text == "hmm"


def test_merge_deltas_keeps_subagent_text_apart():
    batch = [ev.TextDelta(index=0, text="a"), ev.TextDelta(index=0, text="b", parent_tool_use_id="agent")]
    assert len(merge_deltas(batch)) == 2


def _segments(text: str, size: int, limit: int = 50) -> list[str]:
    splitter = SegmentSplitter(limit)
    segments = [""]
    for i in range(0, len(text), size):
        first, *rest = splitter.split(text[i : i + size])
        segments[-1] += first
        segments += rest
    return segments


@pytest.mark.parametrize("size", [1, 3, 17, 1000])
def test_segments_cut_at_paragraphs_outside_code_fences_whatever_the_chunking(size):
    paragraph = "A paragraph of text that goes on for a while.\n\n"
    code = "```python\nx = 1\n\ny = 2\n```\n\n"
    text = (paragraph + code + "- item\n\n  continued\n\n") * 6
    segments = _segments(text, size)
    assert "".join(segments) == text
    assert len(segments) > 3
    for segment in segments:
        assert segment.count("```") % 2 == 0  # never inside a fence
        assert not segment.startswith((" ", "\n"))  # never before an indented continuation


def test_frozen_markdown_renders_the_usual_blocks():
    source = "# Title\n\nSome **bold** and `code`.\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n\n```py\nx = 1\n```\n\n| a | b |\n|---|---|\n| 1 | 22 |\n"
    plain = render_markdown(source).plain
    assert plain.startswith("Title\n\nSome bold and code.")
    assert "• one\n• two\n  • nested" in plain
    assert "1. first\n2. second" in plain
    assert "│ x = 1" in plain
    assert "1 │ 22" in plain


@pytest.mark.parametrize("language", ["python", "py", "mojo"])
def test_a_code_blocks_lexer_is_built_without_unicodes_identifier_ranges_and_lexes_as_pygments_does(language):
    """The lexer for a code block names identifiers with a short class instead of Pygments' 3.5 KB
    XID ranges (most of building it), and gives the same tokens for code with names of any script."""
    from pygments import unistring
    from pygments.lexers import get_lexer_by_name

    from agent_tui.tui.widgets.markdown_lite import _lexer

    ours = _lexer(language)
    theirs = get_lexer_by_name(language, stripnl=False, ensurenl=True, tabsize=8)
    assert type(ours) is not type(theirs) and isinstance(ours, type(theirs))

    def spelled_by_ranges(lexer) -> int:
        patterns = [rule[0] for rules in type(lexer).get_tokendefs().values() for rule in rules if isinstance(rule, tuple)]
        return sum(isinstance(p, str) and unistring.xid_start in p for p in patterns)

    assert spelled_by_ranges(theirs) > 0 and spelled_by_ranges(ours) == 0
    code = (Path(__file__).read_text() + "\ncafé = 1\n数据 = café + 2\ndef ñandú(x_1):\n    return _x\n"
            "class Ω: pass\n@décor\ndef f(): pass\nimport módulo.sub as m2\nprint(f'{café!r}')\n")
    assert list(ours.get_tokens(code)) == list(theirs.get_tokens(code))


def test_a_lexer_that_names_no_identifier_by_unicode_ranges_is_pygments_own():
    from pygments.lexers import get_lexer_by_name

    from agent_tui.tui.widgets.markdown_lite import _lexer

    for language in ("bash", "json", "javascript", "no-such-language"):
        expected = get_lexer_by_name("text" if language == "no-such-language" else language)
        assert type(_lexer(language)) is type(expected)


def test_lines_that_wrap_keep_their_block_s_indent_marker_and_gutter():
    source = (
        "- a list item long enough to wrap at thirty columns\n"
        "  1. a nested numbered item that wraps as well\n\n"
        "> a quote that wraps onto its next line\n\n"
        "```\nx = 'one long line of code that wraps'\n```\n"
    )
    lines = render_markdown(source).layout(30).plain.split("\n")
    assert all(len(line) <= 30 for line in lines)
    assert lines[:4] == [
        "• a list item long enough to",
        "  wrap at thirty columns",
        "  1. a nested numbered item",
        "     that wraps as well",
    ]
    quote = [line for line in lines if line.startswith("▌")]
    code = [line for line in lines if line.startswith("│")]
    assert len(quote) == 2 and len(code) == 2
    assert " ".join(line[2:].rstrip() for line in code) == "x = 'one long line of code that wraps'"


def test_the_builtin_themes_load_as_data():
    themes, problems = load_themes([BUILTIN_DIR])
    assert problems == []
    names = {t.name for t in themes}
    assert {"agent-dark", "agent-light", "agent-high-contrast"} <= names
    assert {t.name: t.dark for t in themes}["agent-light"] is False


def test_a_broken_theme_file_is_reported_not_fatal(tmp_path):
    (tmp_path / "bad.toml").write_text('name = "bad"\ncolour = "#fff"\n')
    themes, problems = load_themes([tmp_path])
    assert themes == [] and "unknown theme fields" in problems[0]
    with pytest.raises(ThemeFileError):
        load_theme(tmp_path / "bad.toml")


def test_tcss_and_widgets_use_theme_variables_not_raw_colours():
    raw = re.compile(r"#[0-9a-fA-F]{3,8}\b|\brgba?\(|\b(?:red|green|blue|yellow|white|black|magenta|cyan)\b")
    offenders = []
    for path in [TUI / "app.tcss", *TUI.rglob("*.py")]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = re.sub(r"/\*.*?\*/", "", line) if path.suffix == ".tcss" else line
            if raw.search(code):
                offenders.append(f"{path.name}:{number}: {line.strip()}")
    assert offenders == []


def test_every_binding_has_an_id_so_a_keymap_can_remap_it():
    from textual.binding import Binding

    from agent_tui.tui.app import AgentApp
    from agent_tui.tui.screens import TranscriptScreen
    from agent_tui.tui.widgets.permission import FeedbackInput, PermissionPrompt
    from agent_tui.tui.widgets.prompt_input import PromptInput

    for owner in (AgentApp, PromptInput, PermissionPrompt, FeedbackInput, TranscriptScreen):
        for binding in owner.__dict__.get("BINDINGS", []):
            assert isinstance(binding, Binding) and binding.id, f"{owner.__name__}: {binding}"


def test_the_tui_modules_import_one_another_without_a_cycle():
    """Counting imports made only for type checking: each module can be read before its users."""
    import ast
    import graphlib
    from pathlib import Path

    import agent_tui.tui

    root = Path(agent_tui.tui.__file__).parent
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        package = module.rpartition(".")[0].split(".") if "." in module else []
        deps = graph.setdefault(module, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[: len(package) - node.level + 1] + ([node.module] if node.module else [])
                for alias in node.names:
                    target = ".".join([*base, alias.name]).lstrip(".")
                    deps.add(target if (root / f"{target.replace('.', '/')}.py").exists() else ".".join(base))
    graph = {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError, naming the cycle


def test_no_function_in_the_tui_is_longer_than_80_lines():
    import ast

    import agent_tui.tui

    root = Path(agent_tui.tui.__file__).parent
    long = [
        f"{path.relative_to(root)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in root.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > 80
    ]
    assert long == []
