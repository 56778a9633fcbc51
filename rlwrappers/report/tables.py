"""Tables of results: fixed-width text for terminals and HTML for reports, from one summary DataFrame."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import numpy as np
from numpy.typing import NDArray

from rlwrappers.error import InvalidArgument, InvalidType

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MISSING", "format_table", "html_table"]

MISSING: Final = "n/a"


def _decimals(values: NDArray[np.float64]) -> int:
    """Decimals that keep about four significant digits of a column's largest value."""
    finite = np.abs(values[np.isfinite(values)])
    largest = float(finite.max()) if finite.size else 0.0
    return 0 if largest >= 10_000 else 1 if largest >= 100 else 2 if largest >= 1 else 3


def _number(value: float, digits: int) -> str:
    """``value`` rounded to ``digits`` decimals; n/a when missing, and no minus sign on a value that rounds to 0."""
    if not np.isfinite(value):
        return MISSING
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _cells(summary: pd.DataFrame) -> tuple[list[str], list[list[str]], int]:
    """Headers, rows of formatted cells and how many leading columns are text (the index levels).

    An ``agent`` level with a single agent is left out.
    """
    if not hasattr(summary, "reset_index") or not hasattr(summary, "columns"):
        raise InvalidType(f"`summary` must be a pandas DataFrame, received {type(summary).__name__}")
    if len(summary) == 0:
        raise InvalidArgument("`summary` must hold at least one row, received an empty table")
    names = [
        n if n is not None else ("method" if summary.index.nlevels == 1 else f"level{i}")
        for i, n in enumerate(summary.index.names)
    ]
    table = summary.copy()
    table.index = table.index.set_names(names)
    if "agent" in names and len(names) > 1 and table.index.get_level_values("agent").nunique() == 1:
        table.index = table.index.droplevel("agent")
        names.remove("agent")
    table = table.reset_index()
    columns: list[list[str]] = [[str(v) for v in table[n]] for n in names]
    for column in summary.columns:
        values = np.asarray(table[column], dtype=np.float64)
        if column in ("episodes", "seeds", "states"):
            columns.append([MISSING if not np.isfinite(v) else str(int(v)) for v in values])
        else:
            digits = _decimals(values)
            columns.append([_number(v, digits) for v in values])
    headers = [*names, *map(str, summary.columns)]
    return headers, [list(row) for row in zip(*columns, strict=True)], len(names)


def format_table(summary: pd.DataFrame) -> str:
    """The summary (one row per agent and shift) as a fixed-width text table, numbers rounded per column.

    Each number column keeps about four significant digits of its largest value; missing values read "n/a".
    The agent column is left out when there is one agent.

    Example:
        >>> from rlwrappers.metrics import reproducibility_table
        >>> print(format_table(reproducibility_table({"clean": [10.0, 12.0], "noisy": [2.0, 12.0]}, [1.0])))
        method  episodes   mean  median   MAD   IQR   std  LCB(1.0)
        ------  --------  -----  ------  ----  ----  ----  --------
        clean          2  11.00   11.00  1.00  1.00  1.00     10.00
        noisy          2   7.00    7.00  5.00  5.00  5.00      2.00
    """
    headers, rows, text = _cells(summary)
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        parts = [c.ljust(w) if i < text else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(parts).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(row) for row in rows)])


def html_table(summary: pd.DataFrame) -> str:
    """A summary table as an HTML table, formatted as :func:`format_table` formats it."""
    headers, rows, text = _cells(summary)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(c)}</td>" if i < text else f'<td class="num">{html.escape(c)}</td>'
            for i, c in enumerate(row)
        )
        + "</tr>\n"
        for row in rows
    )
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>"
