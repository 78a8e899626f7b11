"""Generated sections of a hand-written file: the lines between two HTML comment markers.

A README or BENCHMARKS.md keeps its prose by hand while its tables are written by a command
(``reranklab bench-suite --update``, ``reranklab regress --readme``): the command replaces
only what lies between ``<!-- <name>:start -->`` and ``<!-- <name>:end -->``.
"""

from __future__ import annotations

from reranklab.errors import ConfigError


def replace_section(text: str, name: str, section: str, source: object = "file") -> str:
    """``text`` with the lines between the ``name`` start and end markers replaced by ``section``.

    Raises:
        ConfigError: the markers are missing or out of order (``source`` names the file).

    Example:
        >>> doc = "a\\n<!-- x:start -->\\nold\\n<!-- x:end -->\\nb\\n"
        >>> print(replace_section(doc, "x", "new\\n"), end="")
        a
        <!-- x:start -->
        new
        <!-- x:end -->
        b
    """
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    lines = text.splitlines(keepends=True)
    marks = [i for i, line in enumerate(lines) if line.strip() in (start, end)]
    if len(marks) != 2 or lines[marks[0]].strip() != start:
        raise ConfigError(f"{source}: needs one line {start} and, after it, one line {end}")
    # The end marker keeps a line of its own whether or not the section ends with a newline.
    section = section if not section or section.endswith("\n") else section + "\n"
    return "".join(lines[: marks[0] + 1]) + section + "".join(lines[marks[1] :])
