"""Where `vramlens.exportReport` may write: inside a workspace folder, or the file the user picked in
the client's save dialog (the client says so with ``"chosenInSaveDialog": true``).

A path the user did not choose, outside the workspace, is refused: a command from the client must
not be a way to write anywhere the server's user can. Folders are created only inside the
workspace; a chosen file elsewhere must be in a folder that exists.
"""

from __future__ import annotations

import os
from pathlib import Path


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def export_target(raw, folders: list[str], chosen_in_dialog: bool) -> tuple[Path | None, str | None]:
    """(the report's path, None) where it may be written, else (None, why not in one sentence)."""
    if not isinstance(raw, str) or not raw or "\0" in raw:
        return None, "Give the file to write the report to as `path`."
    if not os.path.isabs(raw):
        return None, f"The report's path must be absolute, not {raw[:200]}."
    resolved = os.path.realpath(raw)
    if any(_inside(resolved, os.path.realpath(folder)) for folder in folders if folder):
        return Path(resolved), None
    if not chosen_in_dialog:
        return None, (f"{raw[:200]} is outside the workspace: the report is written inside the workspace, "
                      "or where the save dialog chose.")
    if not os.path.isdir(os.path.dirname(resolved)):
        return None, f"The folder of {raw[:200]} does not exist; VRAM Lens creates folders only inside the workspace."
    return Path(resolved), None
