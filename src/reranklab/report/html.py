"""Standalone HTML pages of the study's tables, for the Snakemake report (which embeds HTML
items as they are, but shows CSV files only as downloads)."""

from __future__ import annotations

import html

import pandas as pd
from markdown_it import MarkdownIt

STYLE = """
body { font-family: system-ui, sans-serif; font-size: 14px; margin: 1.2em; color: #1e293b; }
table { border-collapse: collapse; margin: 0.8em 0; }
th, td { border: 1px solid #cbd5e1; padding: 3px 8px; }
th { background: #f1f5f9; }
td { text-align: right; font-variant-numeric: tabular-nums; }
td:first-child, th:first-child { text-align: left; }
p.note { color: #475569; max-width: 60em; }
"""


def page(title: str, body: str) -> str:
    """A complete HTML document (UTF-8, the shared style)."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>"
        f"<body>{body}</body></html>\n"
    )


def markdown_page(text: str, title: str) -> str:
    """A Markdown file (the summary, significance and regression tables) as an HTML page.

    Example:
        >>> "<td>0.5</td>" in markdown_page("| a |\\n|---|\\n| 0.5 |\\n", "t")
        True
    """
    return page(title, MarkdownIt("commonmark").enable("table").render(text))


def table_page(table: pd.DataFrame, title: str, note: str = "") -> str:
    """A table (full precision shown to 4 decimals) with its title and an optional note."""
    body = f"<h2>{html.escape(title)}</h2>"
    if table.empty:
        body += '<p class="note">No rows: nothing of this kind in this study\'s grid.</p>'
    else:
        body += table.to_html(index=False, float_format=lambda v: f"{v:.4f}", na_rep="–")
    if note:
        body += f'<p class="note">{html.escape(note)}</p>'
    return page(title, body)
