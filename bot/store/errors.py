"""Errors the state database raises when an operator has to step in."""

from __future__ import annotations

from pathlib import Path


class StateStoreError(Exception):
    """The state database cannot be used as it is; the message says what to do."""


class StateCorruptError(StateStoreError):
    """The file exists but SQLite cannot trust its contents."""

    def __init__(self, path: Path, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(
            f"state database {path} is damaged ({detail}). It has been left untouched: "
            "stop the bot, keep a copy of the file, and restore the latest backup "
            "(or move it aside to start empty, losing settings and subscriptions)."
        )


class SchemaTooNewError(StateStoreError):
    """The file was written by a newer rigcheck; opening it here could lose data."""

    def __init__(self, path: Path | str, found: int, supported: int) -> None:
        self.path = path
        self.found = found
        self.supported = supported
        super().__init__(
            f"state database {path} has schema version {found}, but this build only knows up to "
            f"{supported}. Refusing to open it: run the newer rigcheck, or restore a backup made "
            "by this version."
        )


class DataDirError(StateStoreError):
    """The data directory cannot hold the bot's files; the message names the directory and the fix."""
