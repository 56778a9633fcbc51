"""Pages of reports: one self-contained HTML page with its figures embedded, and where a report goes."""

from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from rlwrappers.error import InvalidType

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["STYLE", "figures_html", "file_label", "html_page", "opened", "png"]


STYLE: Final = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; vertical-align: top; }
th { background: #f3f3f3; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.partial { border: 3px solid #c00; background: #fff0f0; padding: 0.6rem 1rem; margin: 1rem 0; }
.partial h2 { color: #c00; margin-top: 0; }
figure { margin: 1rem 0 2rem; }
figure img { max-width: 100%; }
code { background: #f3f3f3; padding: 0 0.2rem; }
"""


def png(fig: Figure, path: Path, partial_note: str | None) -> str:
    """Saves ``fig`` to ``path`` and returns it base64-encoded."""
    if partial_note:
        fig.suptitle(partial_note, color="#c00", fontweight="bold")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    data = buffer.getvalue()
    path.write_bytes(data)
    return base64.b64encode(data).decode("ascii")


def figures_html(images: Mapping[str, tuple[str, str]]) -> str:
    """Figures as HTML, each from its name, base64 PNG data and caption."""
    return "".join(
        f'<figure><img alt="{html.escape(name)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>\n"
        for name, (caption, data) in images.items()
    )


def html_page(title: str, body: str) -> str:
    """A self-contained HTML page: ``title`` as its title and first heading, then ``body``."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>{STYLE}</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
{body}
</body>
</html>
"""


def opened(name: str, value: Any, kind: Any, out_dir: str | os.PathLike[str] | None, default: str) -> tuple[Any, Path]:
    """``value`` as a ``kind`` (loaded with ``kind.load`` when it is its directory) and the report's directory.

    The report goes to ``out_dir``, else ``<directory>/report`` when ``value`` was a directory, else ``./default``;
    it is created if needed.
    """
    source = None
    if not isinstance(value, kind):
        if not isinstance(value, (str, os.PathLike)):
            raise InvalidType(f"`{name}` must be a {kind.__name__} or its directory, received {value!r}")
        source = Path(value)
        value = kind.load(source)
    out = Path(out_dir) if out_dir is not None else (source / "report" if source else Path(default))
    out.mkdir(parents=True, exist_ok=True)
    return value, out


def file_label(text: str) -> str:
    """``text`` made safe for a file name: characters other than letters, digits and ``-_.`` become ``-``."""
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text)
