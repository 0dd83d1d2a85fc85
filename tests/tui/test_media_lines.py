"""The transcript's one-line placeholders: an image a tool read (with its size) and the API's
web search (its query and its results), each on a real Session against the loopback server."""

from __future__ import annotations

from PIL import Image

from tests.loopback import raw, reply, text, tool_use
from tests.test_websearch import searched_answer

from .helpers import finished, make_app, screen_text, settle, type_prompt, wait_until


async def test_an_image_read_shows_as_one_line_with_its_size(api, tmp_path):
    Image.new("RGB", (64, 48), (200, 30, 30)).save(tmp_path / "shot.png")
    api.push(reply(tool_use("Read", {"file_path": str(tmp_path / "shot.png")}, id="r1")), reply(text("A red box.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(120, 30)) as pilot:
        await type_prompt(pilot, "what is in shot.png")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        screen = screen_text(app)
    size = (tmp_path / "shot.png").stat().st_size
    assert f"image PNG 64×48 · {size} B" in screen


async def test_a_web_search_shows_its_query_and_results_as_lines(api, tmp_path):
    api.push(raw(searched_answer()))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(120, 30)) as pilot:
        await type_prompt(pilot, "when did python 3.14 come out")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        screen = screen_text(app)
    assert "Web search: python 3.14 release date" in screen
    assert "Web search: 2 results · www.python.org, docs.python.org" in screen
    assert "It came out in October." in screen
