"""Errors that name what is wrong and where, so a user can fix the input."""

from __future__ import annotations


class ReranklabError(Exception):
    """Base class: every user-facing failure of reranklab."""


class ConfigError(ReranklabError):
    """A configuration key or value is wrong (the message names the key and the file)."""


class FormatError(ReranklabError):
    """A file is malformed (the message names the file and the line)."""

    def __init__(self, path: object, line: int | str | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


def yaml_error(path: object, exc: Exception) -> FormatError:
    """One line for a YAML parse error: ``file:line:column: invalid YAML: what was expected``.

    PyYAML's own message spans four lines (the context, its mark, the problem, its mark); the
    problem's mark is where the file stops making sense, so it leads, with the context after.

    Example:
        >>> import yaml
        >>> try:
        ...     yaml.safe_load("grid: {variant: [a\\n")
        ... except yaml.YAMLError as exc:
        ...     print(yaml_error("x.yaml", exc))
        x.yaml:2:1: invalid YAML: expected ',' or ']', but got '<stream end>' (while parsing a flow sequence at line 1, column 17)
    """
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None or problem is None:
        return FormatError(path, None, f"invalid YAML: {' '.join(str(exc).split())}")
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and context_mark:
        problem += f" ({context} at line {context_mark.line + 1}, column {context_mark.column + 1})"
    elif context:
        problem += f" ({context})"
    return FormatError(path, f"{mark.line + 1}:{mark.column + 1}", f"invalid YAML: {problem}")


class DownloadError(ReranklabError):
    """A raw file could not be fetched or failed its checksum."""
