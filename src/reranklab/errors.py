"""Errors that name what is wrong and where, so a user can fix the input."""

from __future__ import annotations


class ReranklabError(Exception):
    """Base class: every user-facing failure of reranklab."""


class ConfigError(ReranklabError):
    """A configuration key or value is wrong (the message names the key and the file)."""


class FormatError(ReranklabError):
    """A file is malformed (the message names the file and the line)."""

    def __init__(self, path: object, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


class DownloadError(ReranklabError):
    """A raw file could not be fetched or failed its checksum."""
