"""Jupyter notebooks: Read shows a `.ipynb` as its cells with their outputs, and NotebookEdit
(Claude Code's schema) replaces, inserts or deletes one cell.

Read gives one text block per cell, `<cell id="...">source</cell id="...">` (markdown and raw
cells name their type), then the cell's outputs: text as text, `image/png` / `image/jpeg`
outputs as image blocks (through tools/media.py, so they are checked and downscaled as a read
image is).  A cell without an id (nbformat before 4.5) is `cell-N`, its index, and NotebookEdit
takes that form too.  NotebookEdit is a file change like Edit: the notebook must have been read,
the permission prompt shows the diff of the JSON, and edit rules cover it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ._fileio import FileToolError, PlannedChange, file_not_found
from .base import ToolContext, resolve_path
from .file_change import FileChangeTool
from .file_state import check_writable
from .media import ImageError, image_base64_block, unsendable_note
from .pinned import PinnedFolder

# Outputs of one cell past this many characters are left out, with a way to see them.
MAX_OUTPUT_CHARS = 10_000
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")

DESCRIPTION = """\
Completely replaces the contents of a specific cell in a Jupyter notebook (.ipynb file) with new source. \
Jupyter notebooks are interactive documents that combine code, text, and visualizations, commonly used for \
data analysis and scientific computing. The notebook_path parameter must be an absolute path, not a relative \
path. The cell_id is the id Read shows for the cell (`cell-N` for a notebook without cell ids, N counting \
from 0). Use edit_mode=insert to add a new cell after the cell with cell_id (at the beginning when cell_id is \
not given); cell_type is required then. Use edit_mode=delete to delete the cell with cell_id."""


class NotebookError(Exception):
    """The file is not a notebook agent-tui can read or change."""


def is_notebook_path(path: str | os.PathLike[str]) -> bool:
    return str(path).lower().endswith(".ipynb")


def parse_notebook(text: str) -> dict[str, Any]:
    try:
        notebook = json.loads(text)
    except ValueError as exc:
        raise NotebookError(f"Notebook is not valid JSON: {exc}") from exc
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise NotebookError("Notebook has no cells list; is it a Jupyter notebook?")
    return notebook


def cell_label(cell: dict[str, Any], index: int) -> str:
    cell_id = cell.get("id")
    return cell_id if isinstance(cell_id, str) and cell_id else f"cell-{index}"


def _text(value: Any) -> str:
    """Notebook text: a string or a list of lines."""
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else ""


# ---------------------------------------------------------------- reading


def notebook_blocks(notebook: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    """The cells and their outputs as the blocks Read returns."""
    language = str(notebook.get("metadata", {}).get("language_info", {}).get("name") or "python")
    result: list[dict[str, Any]] = []
    for index, cell in enumerate(notebook["cells"]):
        if not isinstance(cell, dict):
            continue
        label = cell_label(cell, index)
        kind = cell.get("cell_type", "code")
        head = f"<cell_type>{kind}</cell_type>" if kind != "code" else ""
        if kind == "code" and language != "python":
            head += f"<language>{language}</language>"
        source = _text(cell.get("source"))
        result.append({"type": "text", "text": f'<cell id="{label}">{head}{source}</cell id="{label}">'})
        if kind == "code":
            result.extend(_outputs(cell.get("outputs") or [], index, path))
    return result or [{"type": "text", "text": "<system-reminder>This notebook has no cells.</system-reminder>"}]


def _outputs(outputs: list[Any], index: int, path: Path) -> list[dict[str, Any]]:
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for output in outputs:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            texts.append(_text(output.get("text")))
        elif kind in ("execute_result", "display_data"):
            data = output.get("data") or {}
            image_type = next((t for t in _IMAGE_TYPES if t in data), None)
            if image_type is not None:
                images.append(_image(_text(data[image_type]), f"{path.name} cell-{index} output"))
            elif "text/plain" in data:
                texts.append(_text(data["text/plain"]))
        elif kind == "error":
            texts.append(f"{output.get('ename', 'Error')}: {output.get('evalue', '')}\n"
                         + "\n".join(_text(line) for line in output.get("traceback") or []))
    text = "\n".join(t.rstrip("\n") for t in texts if t)
    if len(text) > MAX_OUTPUT_CHARS:
        text = (f"Outputs are too large to include ({len(text):,} characters). Use Bash with: "
                f"cat {path} | jq '.cells[{index}].outputs'")
    return ([{"type": "text", "text": text}] if text else []) + images


def _image(data: str, label: str) -> dict[str, Any]:
    try:
        return image_base64_block(data.replace("\n", ""), label).block
    except ImageError as exc:
        return unsendable_note(f"An image output ({label}) could not be sent to the model: {exc}.")


# ---------------------------------------------------------------- editing


def edit_notebook(notebook: dict[str, Any], input: dict[str, Any]) -> tuple[str, str]:
    """Apply one NotebookEdit to `notebook` in place; (what was done, the cell's id)."""
    cells: list[Any] = notebook["cells"]
    mode = input.get("edit_mode") or "replace"
    cell_id = input.get("cell_id")
    index = _find_cell(cells, cell_id) if cell_id else None
    if mode == "insert":
        kind = input.get("cell_type")
        if kind not in ("code", "markdown"):
            raise FileToolError("cell_type is required when inserting a cell (code or markdown).")
        at = 0 if index is None else index + 1
        cell = _new_cell(notebook, kind, str(input["new_source"]))
        cells.insert(at, cell)
        return "Inserted", cell_label(cell, at)
    if index is None:
        raise FileToolError("cell_id is required to replace or delete a cell.")
    if mode == "delete":
        label = cell_label(cells[index], index)
        del cells[index]
        return "Deleted", label
    cell = cells[index]
    if input.get("cell_type") and input["cell_type"] != cell.get("cell_type"):
        cell = cells[index] = _new_cell(notebook, input["cell_type"], "", keep_id=cell.get("id"))
    cell["source"] = _lines(str(input["new_source"]))
    if cell.get("cell_type") == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return "Updated", cell_label(cell, index)


def _find_cell(cells: list[Any], cell_id: str) -> int:
    for index, cell in enumerate(cells):
        if isinstance(cell, dict) and cell.get("id") == cell_id:
            return index
    if cell_id.startswith("cell-") and cell_id[5:].isdigit() and int(cell_id[5:]) < len(cells):
        return int(cell_id[5:])
    raise FileToolError(f'Cell with ID "{cell_id}" not found in notebook.')


def _new_cell(notebook: dict[str, Any], kind: str, source: str, *, keep_id: Any = None) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": kind}
    # Cell ids exist from nbformat 4.5 on; older notebooks must not gain them.
    if (notebook.get("nbformat", 4), notebook.get("nbformat_minor", 0)) >= (4, 5):
        cell["id"] = keep_id if isinstance(keep_id, str) else _fresh_id(notebook, source)
    cell["metadata"] = {}
    cell["source"] = _lines(source)
    if kind == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


def _fresh_id(notebook: dict[str, Any], source: str) -> str:
    """A new cell's id, the same each time the same edit is planned (the diff asked about is what is written)."""
    taken = {c.get("id") for c in notebook["cells"] if isinstance(c, dict)}
    seed = f"{len(notebook['cells'])}\0{source}"
    while True:
        cell_id = hashlib.sha1(seed.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        if cell_id not in taken:
            return cell_id
        seed += "\0"


def _lines(source: str) -> list[str]:
    return source.splitlines(keepends=True)


def dump_notebook(notebook: dict[str, Any]) -> str:
    """As Jupyter writes a notebook: one-space indents, characters as they are, a final newline."""
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


class NotebookEditTool(FileChangeTool):
    name = "NotebookEdit"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "notebook_path": {
                "type": "string",
                "description": "The absolute path to the Jupyter notebook file to edit "
                "(must be absolute, not relative)",
            },
            "cell_id": {
                "type": "string",
                "description": "The ID of the cell to edit. When inserting a new cell, the new cell will be inserted "
                "after the cell with this ID, or at the beginning if not specified.",
            },
            "new_source": {"type": "string", "description": "The new source for the cell"},
            "cell_type": {
                "type": "string",
                "enum": ["code", "markdown"],
                "description": "The type of the cell (code or markdown). If not specified, it defaults to the current "
                "cell type. If using edit_mode=insert, this is required.",
            },
            "edit_mode": {
                "type": "string",
                "enum": ["replace", "insert", "delete"],
                "description": "The type of edit to make (replace, insert, delete). Defaults to replace.",
            },
        },
        "required": ["notebook_path", "new_source"],
        "additionalProperties": False,
    }

    def path_of(self, input: dict[str, Any], ctx: ToolContext) -> Path:
        return Path(os.path.abspath(resolve_path(str(input["notebook_path"]), ctx.cwd)))

    def summarize(self, input: dict[str, Any]) -> str:
        return super().summarize({"file_path": input.get("notebook_path")})

    def plan(self, input: dict[str, Any], ctx: ToolContext, folder: PinnedFolder | None = None) -> PlannedChange:
        path = self.path_of(input, ctx)
        if not is_notebook_path(path):
            raise FileToolError("File must be a Jupyter notebook (.ipynb file). For editing other file types, "
                                "use the Edit tool.")
        snapshot = self.snapshot(path, folder)
        if not snapshot.exists:
            raise FileToolError(file_not_found(path))
        problem = check_writable(ctx.state, path)
        if problem:
            raise FileToolError(problem)
        try:
            notebook = parse_notebook(snapshot.text)
        except NotebookError as exc:
            raise FileToolError(str(exc)) from exc
        edit_notebook(notebook, input)
        return PlannedChange(snapshot, dump_notebook(notebook))

    def result_text(self, input: dict[str, Any], change: PlannedChange) -> str:
        before = parse_notebook(change.snapshot.text)["cells"]
        index = _find_cell(before, input["cell_id"]) if input.get("cell_id") else None
        mode = input.get("edit_mode") or "replace"
        if mode == "delete" and index is not None:
            return f"Deleted cell {cell_label(before[index], index)}"
        at = (0 if index is None else index + 1) if mode == "insert" else index or 0
        label = cell_label(parse_notebook(change.new_text)["cells"][at], at)
        return f"{'Inserted' if mode == 'insert' else 'Updated'} cell {label} with {input['new_source']}"
