"""A real MCP server (the `mcp` package's MCPServer, over stdio) with a prompt, resources, a tool
that lists the client's roots and one that asks the person for values; for the tests of MCP
prompts, resources, roots and elicitation."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

KIT_SERVER = '''
import json
import os
from pathlib import Path

import mcp.types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage
from pydantic import BaseModel, Field

server = MCPServer("kit")
DIR = Path(os.environ["KIT_DIR"])
# A 2x2 red PNG.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg=="


@server.prompt()
def review(language: str, focus: str = "style") -> str:
    """Review code in a language."""
    return f"Review the {language} code, focusing on {focus}."


@server.prompt()
def chart(title: str) -> list:
    """A chart to discuss."""
    image = types.ImageContent(type="image", data=PNG, mime_type="image/png")
    return [UserMessage(f"Discuss the chart {title}."), UserMessage(image), AssistantMessage("I see a red square.")]


@server.resource("kit://notes/today", name="today", description="Today's notes", mime_type="text/plain")
def today() -> str:
    return "Buy otter food."


@server.resource("kit://data/config.json", name="config", mime_type="application/json")
def config() -> str:
    return json.dumps({"theme": "dark"})


@server.tool()
async def roots(ctx: Context) -> str:
    """The client's roots."""
    listed = await ctx.session.list_roots()
    return "\\n".join(str(root.uri) for root in listed.roots)


@server.tool()
def capabilities(ctx: Context) -> str:
    """What the client declared."""
    return ctx.session.client_params.capabilities.model_dump_json(exclude_none=True)


class Booking(BaseModel):
    name: str = Field(description="Your name")
    guests: int = Field(description="How many guests", ge=1, le=12)
    vegan: bool = Field(default=False, description="A vegan menu")
    room: str = Field(default="garden", json_schema_extra={"enum": ["garden", "hall"]})


@server.tool()
async def book(ctx: Context) -> str:
    """Book a table, asking the person for the details."""
    answer = await ctx.elicit("Booking details, please", Booking)
    if answer.action == "accept":
        data = answer.data
        return f"booked: {data.name}, {data.guests} guests, vegan={data.vegan}, room={data.room}"
    return f"booking {answer.action}"


@server.tool()
async def pin(name: str, text: str, ctx: Context) -> str:
    """Add a resource, and tell the client the list changed."""
    from mcp.server.mcpserver.resources.types import TextResource

    server.add_resource(TextResource(uri=f"kit://pins/{name}", name=name, text=text, mime_type="text/plain"))
    await ctx.session.send_resource_list_changed()
    return "pinned"


async def on_roots_changed(ctx, params):
    listed = await ctx.session.list_roots()
    with (DIR / "roots.log").open("a") as log:
        log.write(" ".join(str(root.uri) for root in listed.roots) + "\\n")


server._lowlevel_server.add_notification_handler(
    "notifications/roots/list_changed", types.NotificationParams, on_roots_changed)

if __name__ == "__main__":
    server.run()
'''


def kit_server(folder: Path) -> dict[str, Any]:
    """The `mcpServers` entry that starts the kit server over stdio (its files in `folder`)."""
    script = folder / "kit_server.py"
    script.write_text(KIT_SERVER)
    return {"command": sys.executable, "args": ["-W", "ignore", str(script)], "env": {"KIT_DIR": str(folder)}}
