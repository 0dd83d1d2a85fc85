"""`@` completion: the folder walk answers at once, a fuzzy search over ripgrep's file list
(.gitignore respected) follows and finds a file by a part of its name anywhere in the tree."""

from __future__ import annotations

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
        await wait_until(pilot, lambda: app.prompt_input.menu_open and any(
            getattr(m, "partial", None) == "disc" for m in offered))
        await pilot.pause(0.05)
        labels = [str(app.prompt_input.menu.get_option_at_index(i).prompt)
                  for i in range(app.prompt_input.menu.option_count)]
        assert labels[0] == "@discover.txt"  # the folder walk's answer first
        assert "@src/shop/pricing/discount_rules.py" in labels and "@docs/discounts.md" in labels
        assert not any("build/" in label for label in labels)
        await pilot.press("down", "tab")
        await pilot.pause(0.05)
        assert app.prompt_input.text == f"look at {labels[1]} "
