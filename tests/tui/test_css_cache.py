"""Parsed CSS kept between runs: read back exactly as parsed, found only for the same CSS
and theme, never in the way (a damaged file is parsed around, bad CSS still fails), and
never a way to run code (the file is data, rebuilt through Textual's constructors)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
from textual.css import parse as css_parse
from textual.css.model import RuleSet
from textual.css.stylesheet import StylesheetParseError
from textual.layout import Layout
from textual.widgets import Footer, Input, TextArea

from agent_tui.tui import css_cache
from agent_tui.tui.css_cache import CachedStylesheet
from tests.loopback import LoopbackServer

from .helpers import make_app, wait_until

APP_CSS = (Path(css_cache.__file__).parent / "app.tcss").read_text()
SOURCES = [
    (APP_CSS, ("app.tcss", ""), False, 0, ""),
    (TextArea.DEFAULT_CSS, ("textual", "TextArea.DEFAULT_CSS"), True, -2, "TextArea"),
    (Input.DEFAULT_CSS, ("textual", "Input.DEFAULT_CSS"), True, -2, "Input"),
    (Footer.DEFAULT_CSS, ("textual", "Footer.DEFAULT_CSS"), True, -1, "Footer"),
]


def theme_variables() -> dict[str, str]:
    from textual.app import App

    return App().get_css_variables()


def stylesheet(folder: Path, variables: dict[str, str], sources=SOURCES) -> CachedStylesheet:
    sheet = CachedStylesheet(variables=variables, folder=folder)
    for css, read_from, is_default, tie_breaker, scope in sources:
        sheet.add_source(css, read_from=read_from, is_default_css=is_default, tie_breaker=tie_breaker, scope=scope)
    return sheet


class CountingParse:
    """Counts calls of Textual's CSS parser (what the cache saves)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = css_parse.parse

        def parse(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr("textual.css.stylesheet.parse", parse)


def test_rules_read_back_are_the_rules_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    variables = theme_variables()
    parser = CountingParse(monkeypatch)
    first = stylesheet(tmp_path, variables)
    parsed = [rule.css for rule in first.rules]
    assert parser.calls == len(SOURCES)
    first.save()

    second = stylesheet(tmp_path, variables)
    assert [rule.css for rule in second.rules] == parsed
    assert parser.calls == len(SOURCES)  # every source came from the file
    assert [r.selector_names for r in second.rules] == [r.selector_names for r in first.rules]
    assert [r.is_default_rules for r in second.rules] == [r.is_default_rules for r in first.rules]
    assert [r.tie_breaker for r in second.rules] == [r.tie_breaker for r in first.rules]


def test_changed_css_is_parsed_again_and_both_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    variables = theme_variables()
    old = stylesheet(tmp_path, variables)
    old.parse()
    old.save()
    changed = [(APP_CSS + "\nGauge { height: 3; }\n", *SOURCES[0][1:]), *SOURCES[1:]]
    parser = CountingParse(monkeypatch)
    new = stylesheet(tmp_path, variables, changed)
    assert any(rule.css.startswith("Gauge") and "height: 3" in rule.css for rule in new.rules)
    assert parser.calls == 1  # the edited file only
    new.save()
    again = stylesheet(tmp_path, variables)
    again.parse()
    assert parser.calls == 1  # the old text is still there for a run of the old version


def test_another_theme_has_its_own_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    variables = theme_variables()
    dark = stylesheet(tmp_path, variables)
    dark.parse()
    dark.save()
    light_variables = {**variables, "primary": "#ff0000"}
    parser = CountingParse(monkeypatch)
    light = stylesheet(tmp_path, light_variables)
    light.parse()
    assert parser.calls == len(SOURCES)  # variables are substituted while parsing: nothing to reuse
    light.save()
    assert len(list(tmp_path.glob("css-*.json"))) == 2


def test_a_damaged_file_is_parsed_around_and_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    variables = theme_variables()
    first = stylesheet(tmp_path, variables)
    parsed = [rule.css for rule in first.rules]
    first.save()
    [path] = tmp_path.glob("css-*.json")
    path.write_bytes(path.read_bytes()[:100])  # cut short, as by a full disk
    parser = CountingParse(monkeypatch)
    second = stylesheet(tmp_path, variables)
    assert [rule.css for rule in second.rules] == parsed
    assert parser.calls == len(SOURCES)
    second.save()
    third = stylesheet(tmp_path, variables)
    third.parse()
    assert parser.calls == len(SOURCES)  # the file was written whole again


def test_an_unwritable_folder_costs_nothing_but_the_speed_up(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    sheet = stylesheet(blocker / "cache", theme_variables())
    assert sheet.rules
    sheet.save()  # no error: the cache is only a speed-up


def test_css_with_errors_still_fails_and_is_not_stored(tmp_path: Path) -> None:
    bad = [("Gauge { heigth: 3; }", ("bad.tcss", ""), False, 0, "")]
    for _ in range(2):
        sheet = stylesheet(tmp_path, theme_variables(), bad)
        with pytest.raises(StylesheetParseError):
            sheet.parse()
        sheet.save()
    assert not list(tmp_path.glob("css-*.json"))


async def test_the_app_reads_back_what_its_last_run_parsed(
    api: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second run parses nothing, and every widget of its screen gets the styles the
    first run's parsing gave it."""
    monkeypatch.setenv("AGENT_TUI_CACHE_DIR", str(tmp_path / "cache"))
    styles = []
    parses = []
    screens = []
    for _ in range(2):
        parser = CountingParse(monkeypatch)
        app, _recorded = make_app(api, tmp_path)
        async with app.run_test(size=(100, 30)) as pilot:
            # What the app mounts right after its first frame is there too.
            await wait_until(pilot, lambda app=app: app.query("#permission-keys") and app.query("#completion-menu"))
            # a steady cursor: where its blink stands when the screen is taken is not the cache's doing
            app.prompt_input.cursor_blink = False
            await pilot.pause()
            styles.append({
                node.id: node.styles.css
                for node in app.screen.walk_children(with_self=True)
                if node.id is not None
            })
            screens.append(app.export_screenshot())
        parses.append(parser.calls)
    assert parses[0] > 10  # the app's CSS and every widget's
    assert parses[1] == 0
    assert len(styles[0]) > 10 and styles[1] == styles[0]
    assert screens[1] == screens[0]  # drawn the same, cell for cell and colour for colour


def test_a_file_is_used_only_for_what_it_was_made_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """File names are short hashes: a file found under another theme's name is not read as its."""
    variables = theme_variables()
    dark = stylesheet(tmp_path, variables)
    dark.parse()
    dark.save()
    [path] = tmp_path.glob("css-*.json")
    light = stylesheet(tmp_path, {**variables, "primary": "#ff0000"})
    path.rename(light._path())  # as if both names were the same
    parser = CountingParse(monkeypatch)
    light.parse()
    assert parser.calls == len(SOURCES)


def test_a_theme_change_mid_run_stores_each_theme_under_its_own_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dark_variables = theme_variables()
    light_variables = {**dark_variables, "primary": "#ff0000"}
    sheet = stylesheet(tmp_path, dark_variables)
    sheet.parse()
    sheet.set_variables(light_variables)
    sheet.parse()
    sheet.save()  # after the switch: what was parsed for each theme goes to that theme's file
    parser = CountingParse(monkeypatch)
    for variables in (dark_variables, light_variables):
        stylesheet(tmp_path, variables).parse()
    assert parser.calls == 0


def shape(rule: RuleSet) -> tuple:
    """Everything a rule set holds, layouts by kind (Textual makes a new one for each rule)."""
    rules = {
        name: (type(value), value.name) if isinstance(value, Layout) else value
        for name, value in rule.styles.get_rules().items()
    }
    return (rule.selector_set, rules, rule.styles.important, rule.errors, rule.is_default_rules,
            rule.tie_breaker, rule.selector_names, rule.pseudo_classes)


def test_rules_read_back_hold_every_field_the_parser_set(tmp_path: Path) -> None:
    variables = theme_variables()
    first = stylesheet(tmp_path, variables)
    first.parse()
    first.save()
    second = stylesheet(tmp_path, variables)
    second.parse()
    assert len(second.rules) > 50
    assert [shape(rule) for rule in second.rules] == [shape(rule) for rule in first.rules]
    assert [type(rule.styles) for rule in second.rules] == [type(rule.styles) for rule in first.rules]


class Payload:
    """Unpickling this runs a shell command that leaves a file behind."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


async def test_a_cache_file_holding_code_is_never_run_and_the_app_starts(
    api: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that could write the cache folder plants pickles that would run code when
    loaded, under the old file names and the current one, and a JSON file naming a function:
    the next start runs none of it, parses its CSS, and draws its screen."""
    folder = tmp_path / "cache"
    folder.mkdir()
    monkeypatch.setenv("AGENT_TUI_CACHE_DIR", str(folder))
    marker = tmp_path / "ran"
    poison = pickle.dumps(Payload(marker))
    pickle.loads(poison)  # the payload works: loading it is running it
    assert marker.exists()
    marker.unlink()
    app, _recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.query("#permission-keys"))
    [current] = folder.glob("css-*.json")  # the name this app's theme reads
    for name in ("css-00000000.pickle", "css-109bf34a.pickle", current.name):
        (folder / name).write_bytes(poison)
    (folder / "css-11111111.json").write_text(
        f'{{"identity": null, "entries": [[["os.system", "touch {marker}"], ["os.system", "touch {marker}"]]]}}'
    )
    parser = CountingParse(monkeypatch)
    app, _recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.query("#permission-keys"))
        assert app.screen.styles.background is not None
    assert not marker.exists()
    assert parser.calls > 10  # parsed, as with no cache
    assert current.read_bytes()[:1] == b"{"  # and the planted file replaced by data


def test_a_json_file_naming_anything_outside_the_table_is_parsed_around(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    variables = theme_variables()
    first = stylesheet(tmp_path, variables)
    parsed = [rule.css for rule in first.rules]
    first.save()
    [path] = tmp_path.glob("css-*.json")
    text = path.read_text()
    assert '["Color",' in text
    path.write_text(text.replace('["Color",', '["builtins.eval",', 1))
    parser = CountingParse(monkeypatch)
    second = stylesheet(tmp_path, variables)
    assert [rule.css for rule in second.rules] == parsed
    assert parser.calls == 1  # the entry with the unknown tag only


def test_a_selector_or_style_of_the_wrong_shape_is_parsed_around(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Data of the wrong shape (a rule named by a number, a selector type that is a string)
    would make styling fail later: it is refused when read."""
    variables = theme_variables()
    first = stylesheet(tmp_path, variables)
    first.parse()
    first.save()
    [path] = tmp_path.glob("css-*.json")
    text = path.read_text()
    for wrong in (text.replace('["D","', '["D",5,"x","', 1),
                  text.replace('["SelectorType",', '["T","oops",', 1)):
        assert wrong != text
        path.write_text(wrong)
        parser = CountingParse(monkeypatch)
        stylesheet(tmp_path, variables).parse()
        assert parser.calls == 1
