"""`@` completion: the folder walk answers at once, a fuzzy search over ripgrep's file list
(.gitignore respected) follows and finds a file by a part of its name anywhere in the tree."""

from __future__ import annotations

import contextlib

from agent_tui.tui.file_index import FileIndex

from .helpers import make_app, wait_until


def _tree(root):
    (root / "src" / "shop" / "pricing").mkdir(parents=True)
    (root / "src" / "shop" / "pricing" / "discount_rules.py").write_text("")
    (root / "src" / "shop" / "cart.py").write_text("")
    (root / "docs").mkdir()
    (root / "docs" / "discounts.md").write_text("")
    (root / "build").mkdir()
    (root / "build" / "discount_copy.py").write_text("")
    (root / ".gitignore").write_text("build/\n")
    (root / "discover.txt").write_text("")


def test_the_index_finds_by_part_of_a_name_or_characters_in_order_and_honours_gitignore(tmp_path):
    _tree(tmp_path)
    (tmp_path / ".git").mkdir()  # ripgrep reads .gitignore inside a repository
    index = FileIndex(tmp_path)
    index.refresh()
    found = index.search("discount", 12)
    assert found[:2] == ["docs/discounts.md", "src/shop/pricing/discount_rules.py"]
    assert "build/discount_copy.py" not in found  # ignored by .gitignore
    assert index.search("sprdr", 12) == ["src/shop/pricing/discount_rules.py"]  # in order, not together
    assert index.search("CART", 12) == ["src/shop/cart.py"]
    assert index.search("zzz", 12) == []


async def test_typing_an_at_word_offers_the_folder_walk_then_files_found_anywhere(api, tmp_path):
    _tree(tmp_path)
    (tmp_path / ".git").mkdir()
    app, _ = make_app(api, tmp_path)
    offered = []
    async with app.run_test(size=(100, 30), message_hook=offered.append) as pilot:
        await pilot.press(*"look at @disc")
        await wait_until(pilot, lambda: app.prompt_input.menu_open and _offered(offered, "disc"))
        await pilot.pause(0.05)
        labels = _labels(app)
        assert labels[0] == "@discover.txt"  # the folder walk's answer first
        assert "@src/shop/pricing/discount_rules.py" in labels and "@docs/discounts.md" in labels
        assert not any("build/" in label for label in labels)
        await pilot.press("down", "tab")
        await pilot.pause(0.05)
        assert app.prompt_input.text == f"look at {labels[1]} "


class _HeldIndex(FileIndex):
    """A file index whose first fuzzy search waits until the test lets it go, and which keeps
    the words each fuzzy search was for."""

    def __init__(self, cwd) -> None:
        super().__init__(cwd)
        import threading

        self.release = threading.Event()
        self.fuzzy_words: list[str] = []
        self.quick_words: list[str] = []

    def search(self, query, limit, *, fuzzy=True, rank_at_most=2000):
        if not fuzzy:
            self.quick_words.append(query)
        else:
            self.fuzzy_words.append(query)
            self.release.wait(10)
        return super().search(query, limit, fuzzy=fuzzy, rank_at_most=rank_at_most)


@contextlib.asynccontextmanager
async def _app_with_held_index(api, tmp_path, *, held: bool):
    """The app on `_tree`, its file index replaced by a `_HeldIndex` (its first fuzzy search held
    when `held`), and the messages it handled."""
    _tree(tmp_path)
    (tmp_path / ".git").mkdir()
    app, _ = make_app(api, tmp_path)
    offered: list = []
    async with app.run_test(size=(100, 30), message_hook=offered.append) as pilot:
        await wait_until(pilot, lambda: app.prompt_input._menu is not None)  # its own index, read
        index = _HeldIndex(tmp_path)
        index.refresh()
        if not held:
            index.release.set()
        app.prompt_input._files = index
        yield app, pilot, index, offered


def _offered(offered: list, partial: str) -> bool:
    return any(getattr(m, "partial", None) == partial for m in offered)


def _labels(app) -> list[str]:
    menu = app.prompt_input.menu
    return [str(menu.get_option_at_index(i).prompt) for i in range(menu.option_count)]


async def test_keys_typed_while_a_search_runs_are_searched_for_once_as_the_newest_word(api, tmp_path):
    # One search thread, one search at a time: a word typed on while one runs is searched for
    # once it ends, as the word now typed, not once per key (each would hold the interpreter's
    # lock against the keys' own handling).
    async with _app_with_held_index(api, tmp_path, held=True) as (app, pilot, index, offered):
        await pilot.press(*"@d")
        await wait_until(pilot, lambda: index.fuzzy_words == ["d"])
        await pilot.press(*"iscou")  # while the search for "d" is held
        index.release.set()
        await wait_until(pilot, lambda: _offered(offered, "discou"))
        assert index.fuzzy_words == ["d", "discou"]
        assert not any(_offered(offered, word) for word in ("d", "di", "dis", "disc", "disco"))
        assert "@src/shop/pricing/discount_rules.py" in _labels(app)


async def test_a_burst_of_keys_is_handled_once_for_the_text_it_leaves(api, tmp_path):
    # Keys that arrive together are all applied before the first of their Changed messages is
    # handled; the menu is worked out once, for the word they leave, not once per key.
    from textual import events

    async with _app_with_held_index(api, tmp_path, held=False) as (app, pilot, index, offered):
        for key in ("at", *"discou"):
            app.prompt_input.post_message(events.Key(key, "@" if key == "at" else key))
        await wait_until(pilot, lambda: _offered(offered, "discou"))
        assert app.prompt_input.text == "@discou"
        assert index.quick_words == ["discou"] and index.fuzzy_words == ["discou"]
