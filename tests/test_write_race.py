"""Write, Edit and MultiEdit write where the permission check looked, or refuse.

The policy decides on the file's resolved path.  A command running in the background may swap a
folder on that path for a symlink between the check and the write; the tools then refuse with a
clear error and nothing lands where the check did not look.
"""

from __future__ import annotations

import os
from pathlib import Path

from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.tools.write import WriteTool


def test_a_file_tool_decision_carries_the_path_it_was_made_on(tmp_path):
    proj = tmp_path / "proj"
    (proj / "real").mkdir(parents=True)
    (proj / "alias").symlink_to(proj / "real")
    policy = PermissionPolicy(mode="acceptEdits", cwd=proj)
    decision = policy.decide_call(WriteTool(), {"file_path": str(proj / "alias" / "a.txt"), "content": "x"})
    assert decision.behavior == "allow"
    assert decision.resolved == os.path.realpath(proj / "real" / "a.txt")
    outside = policy.decide_call(WriteTool(), {"file_path": str(tmp_path / "b.txt"), "content": "x"})
    assert outside.behavior == "ask" and outside.resolved == str(Path(os.path.realpath(tmp_path)) / "b.txt")
