"""Jupyter notebooks: Read returns a notebook's cells with their outputs (an image output as an
image block), NotebookEdit (Claude Code's schema) replaces, inserts and deletes cells with Edit's
permission behaviour: the real tools through the loop against the loopback server."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

from PIL import Image

from agent_tui.engine import events as ev
from agent_tui.engine.permissions.policy import PermissionAnswer, PermissionPolicy
from tests.engine_helpers import Recorder, auto_answer, make_session, tool_results
from tests.loopback import reply, tool_use


def png_base64(size=(40, 30)) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", size, (20, 120, 200)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def notebook(path: Path, *, ids: bool = True) -> Path:
    """A notebook with a markdown cell, a code cell that printed and plotted, and one more code cell."""
    cells: list[dict[str, Any]] = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Load\n", "Read the data."]},
        {"cell_type": "code", "execution_count": 3, "metadata": {}, "source": ["x = load()\n", "plot(x)"],
         "outputs": [
             {"output_type": "stream", "name": "stdout", "text": ["loaded 42 rows\n"]},
             {"output_type": "display_data", "metadata": {},
              "data": {"image/png": png_base64(), "text/plain": ["<Figure size 640x480>"]}},
             {"output_type": "execute_result", "execution_count": 3, "metadata": {}, "data": {"text/plain": ["42"]}},
         ]},
        {"cell_type": "code", "execution_count": 4, "metadata": {}, "source": "print(x)",
         "outputs": [{"output_type": "error", "ename": "NameError", "evalue": "name 'x' is not defined",
                      "traceback": ["Traceback", "NameError: name 'x' is not defined"]}]},
    ]
    if ids:
        for cell, cell_id in zip(cells, ("intro", "load", "show"), strict=True):
            cell["id"] = cell_id
    data = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4,
            "nbformat_minor": 5 if ids else 4}
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def cells(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["cells"]


async def run_calls(api, tmp_path: Path, *calls: dict[str, Any], policy: PermissionPolicy | None = None,
                    answer: PermissionAnswer | None = None):
    """The model makes `calls` (name, input) one turn each, then answers; the session and its events."""
    api.push(*(reply(tool_use(c["name"], c["input"], id=f"t{i}")) for i, c in enumerate(calls)), reply("Done."))
    session = make_session(api.url, tmp_path, policy=policy or PermissionPolicy(mode="acceptEdits"))
    recorder = Recorder(session)
    if answer is not None:
        auto_answer(session, answer)
    try:
        await session.submit("work on the notebook")
    finally:
        await session.aclose()
    return session, recorder


def read(path: Path) -> dict[str, Any]:
    return {"name": "Read", "input": {"file_path": str(path)}}


def edit(path: Path, **fields: Any) -> dict[str, Any]:
    return {"name": "NotebookEdit", "input": {"notebook_path": str(path), **fields}}


async def test_read_of_a_notebook_sends_its_cells_and_outputs_with_images(api, tmp_path):
    path = notebook(tmp_path / "analysis.ipynb")

    await run_calls(api, tmp_path, read(path))

    [result] = tool_results(api.requests[1].body)
    blocks = result["content"]
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    assert texts[0] == '<cell id="intro"><cell_type>markdown</cell_type># Load\nRead the data.</cell id="intro">'
    assert texts[1] == '<cell id="load">x = load()\nplot(x)</cell id="load">'
    assert texts[2] == "loaded 42 rows\n42"
    assert texts[3] == '<cell id="show">print(x)</cell id="show">'
    assert texts[4].startswith("NameError: name 'x' is not defined")
    [image] = [b for b in blocks if b["type"] == "image"]
    assert image["source"]["media_type"] == "image/png" and image["source"]["data"] == png_base64()
    assert blocks.index(image) == 3  # right after the cell that drew it


async def test_notebook_edit_replaces_a_cell_and_clears_its_outputs(api, tmp_path):
    path = notebook(tmp_path / "analysis.ipynb")

    session, recorder = await run_calls(api, tmp_path, read(path), edit(path, cell_id="load", new_source="x = load(7)"))

    [result] = tool_results(api.requests[2].body)
    assert not result.get("is_error") and result["content"] == "Updated cell load with x = load(7)"
    load = cells(path)[1]
    assert load["source"] == ["x = load(7)"] and load["outputs"] == [] and load["execution_count"] is None
    assert load["id"] == "load" and cells(path)[0]["source"] == ["# Load\n", "Read the data."]
    assert not recorder.of(ev.PermissionRequested)  # acceptEdits, inside the project: as Edit


async def test_notebook_edit_inserts_after_a_cell_and_deletes_one(api, tmp_path):
    path = notebook(tmp_path / "analysis.ipynb")

    await run_calls(api, tmp_path, read(path),
                    edit(path, cell_id="intro", new_source="## Notes\nsee below", cell_type="markdown",
                         edit_mode="insert"),
                    edit(path, cell_id="show", new_source="", edit_mode="delete"),
                    edit(path, new_source="import pandas", cell_type="code", edit_mode="insert"))

    after = cells(path)
    assert [c["cell_type"] for c in after] == ["code", "markdown", "markdown", "code"]
    assert after[0]["source"] == ["import pandas"] and after[0]["outputs"] == []
    assert after[2]["source"] == ["## Notes\n", "see below"] and len(after[2]["id"]) == 8
    assert "show" not in [c.get("id") for c in after]
    inserted, deleted, first = (tool_results(api.requests[i].body)[0]["content"] for i in (2, 3, 4))
    assert inserted == f"Inserted cell {after[2]['id']} with ## Notes\nsee below"
    assert deleted == "Deleted cell show" and first.startswith("Inserted cell ")


async def test_a_notebook_without_cell_ids_is_edited_by_index(api, tmp_path):
    path = notebook(tmp_path / "old.ipynb", ids=False)

    await run_calls(api, tmp_path, read(path), edit(path, cell_id="cell-2", new_source="print(1)"),
                    edit(path, cell_id="cell-0", new_source="y = 2", cell_type="code", edit_mode="insert"))

    [read_result] = tool_results(api.requests[1].body)
    assert read_result["content"][0]["text"].startswith('<cell id="cell-0"><cell_type>markdown')
    after = cells(path)
    assert after[3]["source"] == ["print(1)"] and after[1]["source"] == ["y = 2"]
    assert all("id" not in c for c in after)  # nbformat 4.4 has no cell ids


async def test_notebook_edit_refuses_a_notebook_not_read_first(api, tmp_path):
    path = notebook(tmp_path / "analysis.ipynb")
    before = path.read_text()

    await run_calls(api, tmp_path, edit(path, cell_id="load", new_source="x = 1"))

    [result] = tool_results(api.requests[1].body)
    assert result["is_error"] and "has not been read yet" in result["content"]
    assert path.read_text() == before


async def test_notebook_edit_asks_like_edit_and_shows_the_change(api, tmp_path):
    path = notebook(tmp_path / "analysis.ipynb")

    _, recorder = await run_calls(api, tmp_path, read(path), edit(path, cell_id="load", new_source="x = 2"),
                                  policy=PermissionPolicy(mode="default"), answer=PermissionAnswer("allow"))

    [asked] = recorder.of(ev.PermissionRequested)
    assert asked.tool_name == "NotebookEdit" and asked.message == "NotebookEdit wants to edit a notebook."
    assert '+    "x = 2"' in asked.diff and asked.suggested_rule == "Edit(./analysis.ipynb)"
    assert cells(path)[1]["source"] == ["x = 2"]


async def test_edit_rules_and_the_working_directories_cover_notebook_edit(api, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    inside = notebook(project / "analysis.ipynb")
    outside = notebook(tmp_path / "elsewhere.ipynb")
    policy = PermissionPolicy(mode="acceptEdits", cwd=project, deny=["Edit(./analysis.ipynb)"],
                              allow=[f"Read(/{outside})"])

    session, recorder = await run_calls(api, project, read(inside), read(outside),
                                        edit(inside, cell_id="load", new_source="x = 3"),
                                        edit(outside, cell_id="load", new_source="x = 4"), policy=policy,
                                        answer=PermissionAnswer("deny", message="Not that one."))

    denied, asked = (tool_results(api.requests[i].body)[0] for i in (3, 4))
    assert denied["is_error"] and "Edit(./analysis.ipynb)" in denied["content"]
    # Outside the working directories it asks even in acceptEdits.
    assert asked["is_error"] and asked["content"] == "Not that one."
    [question] = recorder.of(ev.PermissionRequested)
    assert question.tool_name == "NotebookEdit" and "outside the working directories" in question.message
    assert cells(inside)[1]["source"] == ["x = load()\n", "plot(x)"]
    assert cells(outside)[1]["source"] == ["x = load()\n", "plot(x)"]
