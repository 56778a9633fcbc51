"""A robustness card as files: its record checked against the schema, its page, its badge, and a leaderboard.

A robustness card grades one agent on one env under the families of shift of a severity ladder, each at levels 1
to 5 (the grade is :mod:`rlwrappers.metrics.grade`'s). The runner hands over one record, a dict of format
``rlwrappers-robustness-card`` version 2 (ladder card-v2: skill, scores, stars and their probability);
``robustness_card.v2.schema.json`` beside this module (JSON Schema, draft 2020-12) says every field, and
:func:`robustness_card_schema` returns it. Cards of version 1 (ladder card-v1, graded by loss relative to the
agent's own clean return, :mod:`rlwrappers.metrics.card`), checked against ``robustness_card.schema.json``, still
read, draw and rank among themselves. Here the record becomes files::

    <out_dir>/
      card.json    the record: sorted keys, indented, no NaN (null stands for "not rated / not applicable")
      card.html    one self-contained page: the rating, the tables, the severity curves, the recovery plot
                   and, given frames, the clean and the worst episode side by side (everything embedded)
      badge.svg    "robustness | 3/5", coloured by the stars

- :func:`validate_robustness_card` checks a record; a bad one raises a typed error naming the JSON path of the
  first bad value and what it holds.
- :func:`robustness_card_html` and :func:`robustness_badge_svg` draw the page and the badge;
  :func:`write_robustness_card` writes the three files, each atomically, and :func:`read_robustness_card` reads a
  card back.
- :func:`robustness_leaderboard_html` and :func:`write_robustness_leaderboard` rank several cards of one env and
  one ladder version: cards compare only within both.

Every number on the pages carries its exact value and where it comes from: ``data-value`` holds the JSON number,
``data-path`` its JSON path in the record (``data-card``: which record, on a leaderboard), ``data-transform``
``one-minus`` where the page shows ``1 - x`` (the normalized return's interval from the impact's), and
``data-family``, ``data-parent``, ``data-level`` and ``data-field`` say what it is. Nothing here computes a
score.
"""

from __future__ import annotations

import base64
import functools
import html
import io
import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from rlwrappers._optional import require
from rlwrappers.agents.training import describe
from rlwrappers.error import Error, InvalidArgument, InvalidType, MissingFile
from rlwrappers.metrics.card import STAR_THRESHOLDS, TOLERATED
from rlwrappers.metrics.grade import FAMILY_STARS, SCORE_STARS
from rlwrappers.report.html import figures_html, html_page
from rlwrappers.report.plots import figure, figure_row, palette_colour

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "CARD_FILE",
    "LEADERBOARD_FILE",
    "ROBUSTNESS_CARD_FORMAT",
    "ROBUSTNESS_CARD_FORMAT_VERSION",
    "read_robustness_card",
    "robustness_badge_svg",
    "robustness_card_html",
    "robustness_card_schema",
    "robustness_leaderboard_html",
    "validate_robustness_card",
    "write_robustness_card",
    "write_robustness_leaderboard",
]

#: The ``format`` of a robustness card's record.
ROBUSTNESS_CARD_FORMAT: Final = "rlwrappers-robustness-card"
#: The ``format_version`` the card runner writes now.
ROBUSTNESS_CARD_FORMAT_VERSION: Final = 2
#: Each ``format_version`` this module reads, and its schema's file.
_SCHEMA_FILES: Final = {1: "robustness_card.schema.json", 2: "robustness_card.v2.schema.json"}

CARD_FILE: Final = "card.json"
_PAGE_FILE: Final = "card.html"
_BADGE_FILE: Final = "badge.svg"
LEADERBOARD_FILE: Final = "leaderboard.html"
_LEVELS: Final = (1, 2, 3, 4, 5)
_STAR, _NO_STAR = "\u2605", "\u2606"
#: The badge's right-hand colour by stars (shields.io's red to bright green); grey when not rated.
_BADGE_COLOURS: Final = {1: "#e05d44", 2: "#fe7d37", 3: "#dfb317", 4: "#97ca00", 5: "#4c1"}
_UNRATED_COLOUR: Final = "#9f9f9f"
#: The episode animation: at most this many frames (longer episodes show every k-th), each side at most this high.
_GIF_FRAMES: Final = 300
_GIF_HEIGHT: Final = 256
_GIF_MILLISECONDS: Final = 50
_GIF_GAP: Final = 8

_CARD_STYLE: Final = """
body { max-width: 72rem; }
.rating { border: 2px solid #888; border-radius: 0.5rem; padding: 0.6rem 1rem; margin: 1rem 0; }
.rating .big { font-size: 1.8rem; }
.glyphs { color: #d4a000; letter-spacing: 0.1rem; }
.unrated { color: #777; }
td small, th small { color: #666; font-weight: normal; font-size: 0.75rem; }
tr.sub th { padding-left: 1.6rem; font-weight: normal; }
td.missing { color: #999; text-align: center; }
.note { color: #555; font-size: 0.9rem; }
.stars, td small { white-space: nowrap; }
img.badge { vertical-align: middle; }
"""


def robustness_card_schema(version: int = ROBUSTNESS_CARD_FORMAT_VERSION) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a robustness card's record of format ``version``, as a new dict.

    Example:
        >>> schema = robustness_card_schema()
        >>> schema["properties"]["format"], schema["properties"]["format_version"]
        ({'const': 'rlwrappers-robustness-card'}, {'const': 2})
        >>> robustness_card_schema(1)["properties"]["format_version"]
        {'const': 1}

    Raises:
        InvalidArgument: no such format version.
    """
    if version not in _SCHEMA_FILES or isinstance(version, bool):
        raise InvalidArgument(
            f"`version` must be a card format version, one of {list(_SCHEMA_FILES)}, received {version!r}"
        )
    text = resources.files("rlwrappers.report").joinpath(_SCHEMA_FILES[version]).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@functools.cache
def _validator(version: int) -> Any:
    """A draft 2020-12 validator of the schema; a tuple counts as an array, and only int and float as numbers."""
    jsonschema = require("jsonschema", purpose="checking robustness cards")
    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine_many(
        {
            "array": lambda _, value: isinstance(value, (list, tuple)),
            "number": lambda _, value: isinstance(value, (int, float)) and not isinstance(value, bool),
        }
    )
    return jsonschema.validators.extend(base, type_checker=checker)(robustness_card_schema(version))


def _json_path(parts: Iterable[str | int]) -> str:
    """``$.families[0].levels[2]``: a JSON path as jsonschema writes it."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def _short(value: Any) -> str:
    """``repr(value)``, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _nonfinite(value: Any, parts: tuple[str | int, ...] = ()) -> tuple[tuple[str | int, ...], float] | None:
    """The path and value of the first NaN or infinity in ``value``, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (parts, value)
    if isinstance(value, Mapping):
        items: Iterable[tuple[str | int, Any]] = ((str(k), v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _nonfinite(item, (*parts, key))
        if found is not None:
            return found
    return None


def _whose(record: Any, parts: Sequence[str | int]) -> str:
    """`` (family 'x', level 3)`` for a path inside a family, so a message says which one; else empty."""
    named: list[str] = []
    node = record
    for i, part in enumerate(parts):
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
        if isinstance(part, int) and i and parts[i - 1] in ("families", "sub_families") and isinstance(node, Mapping):
            named.append(f"{'sub-' if parts[i - 1] == 'sub_families' else ''}family {node.get('name')!r}")
        elif isinstance(part, int) and i and parts[i - 1] == "levels" and isinstance(node, Mapping):
            named.append(f"level {node.get('level')!r}")
    return f" ({', '.join(named)})" if named else ""


def _schema_problem(error: Any, version: int) -> tuple[list[str | int], str]:
    """The path and the words of a jsonschema error."""
    parts = list(error.absolute_path)
    instance = error.instance
    if error.validator == "required" and isinstance(instance, Mapping):
        missing = next(k for k in error.validator_value if k not in instance)
        return [*parts, missing], "is missing"
    if error.validator == "additionalProperties" and isinstance(instance, Mapping):
        unknown = sorted(set(instance) - set(error.schema.get("properties", {})))[0]
        words = f"is not a field of a robustness card (format version {version})"
        return [*parts, unknown], words
    shown, message = repr(instance), str(error.message)
    if message.startswith(shown):
        return parts, f"holds {_short(instance)}, which{message[len(shown) :]}"
    return parts, f"holds {_short(instance)}: {message}"


def _duplicates(record: Mapping[str, Any]) -> tuple[list[str | int], str] | None:
    """A family named twice, or a level given twice in one family: the path and the words, or None."""
    groups: list[tuple[list[str | int], Sequence[Any]]] = [(["families"], record["families"])]
    groups += [
        (["families", i, "sub_families"], family["sub_families"])
        for i, family in enumerate(record["families"])
        if family["sub_families"]
    ]
    for where, families in groups:
        seen: dict[str, int] = {}
        for i, family in enumerate(families):
            if family["name"] in seen:
                first = _json_path([*where, seen[family["name"]]])
                return [*where, i, "name"], f"holds {family['name']!r}, which names the family at {first} too"
            seen[family["name"]] = i
            levels = [level["level"] for level in family["levels"]]
            for j, level in enumerate(levels):
                if level in levels[:j]:
                    return [*where, i, "levels", j, "level"], f"holds {level}, a level given twice in this family"
    return None


def _inconsistency(record: Mapping[str, Any]) -> tuple[list[str | int], str] | None:
    """A rule the schema cannot say that the record breaks: the path and the words, or None."""
    found = _duplicates(record)
    if found is not None:
        return found
    stars = record["overall"]["stars"]
    if stars is not None and not record.get("rated", True):
        return ["overall", "stars"], f"holds {stars}, but $.rated is false: a card that is not rated has null stars"
    if stars is not None and not record["settings"]["complete"]:
        return ["overall", "stars"], (
            f"holds {stars}, but $.settings.complete is false: only a card of every family of its ladder has an"
            " overall rating"
        )
    return None


def validate_robustness_card(record: Any) -> None:
    """Checks a robustness card's record against the schema of its format version (1 or 2), and that JSON can hold it.

    Beyond the schema, no number may be NaN or infinite (JSON has none: null stands for "not rated"), no family
    may be named twice nor give a level twice, and only a card of every family of its ladder
    (``settings.complete``), and in version 1 a rated one, may have overall stars. A tuple counts as a JSON array.

    Raises:
        InvalidType: ``record`` is not a mapping.
        InvalidArgument: the record breaks a rule; the message names the JSON path of the first bad value (as
            ``$.families[0].levels[2].impact``, with the family's and level's names) and what it holds.
        MissingExtra: jsonschema (the ``report`` extra) is not installed.
    """
    if not isinstance(record, Mapping):
        raise InvalidType(f"`record` must be a robustness card's record (a dict), received {type(record).__name__}")
    problem: tuple[Sequence[str | int], str] | None = None
    nonfinite = _nonfinite(record)
    if nonfinite is not None:
        parts, value = nonfinite
        problem = (
            parts,
            f"holds {value}: JSON has no NaN or infinity; write null for a value not rated or not applicable",
        )
    version: Any = record.get("format_version")
    if problem is None and (version not in _SCHEMA_FILES or isinstance(version, bool)):
        problem = (["format_version"], f"holds {_short(version)}, not a card format version: {list(_SCHEMA_FILES)}")
    if problem is None:
        errors = list(_validator(version).iter_errors(record))
        if errors:
            best_match = require("jsonschema.exceptions", purpose="checking robustness cards").best_match
            problem = _schema_problem(best_match(errors), int(version))
    if problem is None:
        problem = _inconsistency(record)
    if problem is not None:
        where, words = problem
        raise InvalidArgument(
            f"`record` is not a valid robustness card: {_json_path(where)}{_whose(record, where)} {words}"
        )


def _write_atomically(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` through a temporary file beside it: a reader sees the old file or the new one."""
    descriptor, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _card_json(record: Mapping[str, Any]) -> str:
    """The record as card.json holds it: sorted keys, indented by 2, no NaN."""
    return json.dumps(record, sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def write_robustness_card(
    record: Mapping[str, Any], out_dir: str | os.PathLike[str], frames: Mapping[str, Any] | None = None
) -> Path:
    """Checks the record, then writes ``card.json``, ``card.html`` and ``badge.svg`` into ``out_dir``.

    Each file is written to a temporary file beside it and then renamed, so a reader never sees half of one.

    Args:
        record: the robustness card's record (see :func:`validate_robustness_card`).
        out_dir: the folder to write into; it is created if needed.
        frames: the episodes to animate on the page (see :func:`robustness_card_html`).

    Returns:
        ``out_dir``.

    Raises:
        InvalidArgument: the record is not a valid robustness card (nothing is written), or a frame is not an
            HxWx3 uint8 image.
    """
    validate_robustness_card(record)
    if not isinstance(out_dir, (str, os.PathLike)):
        raise InvalidType(f"`out_dir` must be a path, received {out_dir!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    texts = {
        CARD_FILE: _card_json(record),
        _PAGE_FILE: _card_page(record, frames),
        _BADGE_FILE: _badge(record),
    }
    for name, text in texts.items():
        _write_atomically(out / name, text)
    return out


def read_robustness_card(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The record of a robustness card, checked: ``path`` is its ``card.json`` or the folder that holds it.

    Raises:
        MissingFile: there is no card.json at ``path``.
        InvalidArgument: the file is not JSON, or not a valid robustness card; the message names the file.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidType(f"`path` must be a robustness card's card.json or its folder, received {path!r}")
    source = Path(path)
    if source.is_dir():
        source = source / CARD_FILE
    if not source.is_file():
        raise MissingFile(f"no robustness card at {str(source)!r}; write_robustness_card writes one as {CARD_FILE}")
    try:
        record = json.loads(source.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"{str(source)!r} is not a robustness card: not JSON ({exc})") from None
    try:
        validate_robustness_card(record)
    except (InvalidArgument, InvalidType) as exc:
        raise InvalidArgument(f"{str(source)!r} is damaged: {exc}") from None
    result: dict[str, Any] = record
    return result


def _text(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals, and no minus sign on one that rounds to 0."""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _return_digits(values: Iterable[float]) -> int:
    """Decimals that keep about four significant digits of the largest return."""
    largest = max((abs(v) for v in values), default=0.0)
    return 0 if largest >= 10_000 else 1 if largest >= 100 else 2


def _returns(record: Mapping[str, Any]) -> list[float]:
    """Every mean return of the record: random, clean, each level and each intervention."""
    values = [record["random_return"], record["clean"]["mean_return"]]
    for family in _all_families(record):
        values += [level["mean_return"] for _, level in _levels(family["family"])]
    values += [x["mean_return"] for x in record["interventions"]]
    return values


def _span(
    value: Any, digits: int, path: Sequence[str | int], field: str, *, one_minus: bool = False, **data: Any
) -> str:
    """A number of the record on the page, carrying its exact value, its JSON path and what it is; n/a for null.

    ``data`` adds ``data-<key>`` attributes (family, parent, level, card); None values are left out.
    """
    if value is None:
        return '<span class="na">n/a</span>'
    shown = 1.0 - value if one_minus else value
    attributes = {"field": field, **data, "path": _json_path(path), "value": json.dumps(shown)}
    if one_minus:
        attributes["transform"] = "one-minus"
    text = str(shown) if isinstance(shown, int) else _text(shown, digits)
    cells = "".join(f' data-{k}="{html.escape(str(v))}"' for k, v in attributes.items() if v is not None)
    return f'<span class="v"{cells}>{text}</span>'


def _interval(
    pair: Sequence[float] | None,
    digits: int,
    path: Sequence[str | int],
    field: str,
    *,
    one_minus: bool = False,
    **data: Any,
) -> str:
    """``[low, high]`` as two numbers of the record; the normalized interval of an impact one with ``one_minus``."""
    if pair is None:
        return ""
    low, high = (1, 0) if one_minus else (0, 1)
    first = _span(pair[low], digits, [*path, low], f"{field}_low", one_minus=one_minus, **data)
    second = _span(pair[high], digits, [*path, high], f"{field}_high", one_minus=one_minus, **data)
    return f"[{first}, {second}]"


def _glyphs(stars: int | None) -> str:
    """★★★☆☆ for 3 stars; empty when not rated."""
    return "" if stars is None else _STAR * stars + _NO_STAR * (5 - stars)


def _stars_cell(stars: int | None, path: Sequence[str | int], **data: Any) -> str:
    """Stars as glyphs and ``3/5``, or "not rated"."""
    if stars is None:
        return '<span class="unrated">not rated</span>'
    number = _span(stars, 0, path, "stars", **data)
    return f'<span class="stars"><span class="glyphs" aria-hidden="true">{_glyphs(stars)}</span> {number}/5</span>'


def _e(value: Any) -> str:
    """A string of the record, HTML-escaped."""
    return html.escape(str(value))


def _title(family: Mapping[str, Any]) -> str:
    """A family's title, else its name."""
    return str(family["title"] or family["name"])


def _levels(family: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """A family's levels with their index in the record, in order of level."""
    return sorted(enumerate(family["levels"]), key=lambda item: item[1]["level"])


def _all_families(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every family and sub-family with its JSON path and its parent's name (None for a family)."""
    out: list[dict[str, Any]] = []
    for i, family in enumerate(record["families"]):
        out.append({"family": family, "path": ["families", i], "parent": None})
        for j, sub in enumerate(family["sub_families"] or ()):
            out.append(
                {
                    "family": sub,
                    "path": ["families", i, "sub_families", j],
                    "parent": family["name"],
                    "parent_title": _title(family),
                }
            )
    return out


def _unrated_reason(record: Mapping[str, Any]) -> str:
    """Why a card has no overall rating, as a sentence."""
    if not record.get("rated", True):
        clean, random = record["clean"]["mean_return"], record["random_return"]
        return (
            f"the clean mean return ({clean:.4g}) is not above the random policy's ({random:.4g}), so there is no"
            " scale to measure impact on."
        )
    if not record["settings"]["complete"]:
        run = ", ".join(record["settings"]["families"]) or "none"
        return (
            f"not every family of ladder {record['ladder']} was run (run: {run}); an overall rating needs all of them."
            " The families' own scores below stand."
        )
    return "the record gives no overall rating."


def _graded(record: Mapping[str, Any]) -> bool:
    """Whether the card grades skill (format version 2 on), rather than loss relative to the clean return."""
    return int(record["format_version"]) >= 2


def _rating_html(record: Mapping[str, Any]) -> str:
    if _graded(record):
        return _skill_rating_html(record)
    overall = record["overall"]
    stars = overall["stars"]
    mean = _span(overall["mean_ausc"], 3, ["overall", "mean_ausc"], "mean_ausc")
    if stars is None:
        head = (
            '<section id="rating" class="rating" data-rated="false" data-stars="">\n'
            '<div class="big unrated"><span id="rating-text">not rated</span></div>\n'
            f'<p id="rating-reason">Not rated: {_e(_unrated_reason(record))}</p>\n'
        )
    else:
        head = (
            f'<section id="rating" class="rating" data-rated="true" data-stars="{stars}">\n'
            f'<div class="big"><span class="glyphs" aria-label="{stars} of 5 stars">{_glyphs(stars)}</span> '
            f'<span id="rating-text">{stars}/5</span></div>\n'
        )
    details = []
    if overall["mean_ausc"] is not None:
        details.append(f"mean AUSC over the families {mean}")
    if overall["worst_family"] is not None:
        worst = _span(overall["worst_stars"], 0, ["overall", "worst_stars"], "worst_stars")
        titles = {family["name"]: _title(family) for family in record["families"]}
        name = titles.get(overall["worst_family"], overall["worst_family"])
        details.append(f"worst family <b>{_e(name)}</b> ({worst}/5)")
    rule = (
        "The overall rating is the stars of the mean AUSC, but at most one more than the worst family's: "
        "min(stars(mean AUSC), 1 + worst family's stars)."
    )
    said = f"<p>{'; '.join(details)}.</p>\n" if details else ""
    thin = ""
    if any(f["ausc"] is not None and f["ausc_ci"] is None for f in record["families"]):
        thin = (
            '<p id="thin-margin" class="note">Some intervals are not given: in some bootstrap replicates the clean'
            " arm does no better than the random policy, so the margin the scores divide by is too thin for an"
            " interval. Read these scores with care.</p>\n"
        )
    return f'{head}{said}{thin}<p class="note">{rule}</p>\n</section>\n'


def _skill_rating_html(record: Mapping[str, Any]) -> str:
    """The rating of a card that grades skill: stars, their probability, the score and the worst family."""
    overall = record["overall"]
    stars = overall["stars"]
    if stars is None:
        head = (
            '<section id="rating" class="rating" data-rated="false" data-stars="">\n'
            '<div class="big unrated"><span id="rating-text">not rated</span></div>\n'
            f'<p id="rating-reason">Not rated: {_e(_unrated_reason(record))}</p>\n'
        )
        chances = ""
    else:
        head = (
            f'<section id="rating" class="rating" data-rated="true" data-stars="{stars}">\n'
            f'<div class="big"><span class="glyphs" aria-label="{stars} of 5 stars">{_glyphs(stars)}</span> '
            f'<span id="rating-text">{stars}/5</span></div>\n'
        )
        shares = [
            f"{k}: {_span(p, 2, ['overall', 'stars_probability', k - 1], 'stars_probability', stars=k)}"
            for k, p in enumerate(overall["stars_probability"], start=1)
        ]
        chances = (
            '<p id="stars-probability">How sure: the share of bootstrap replicates of this card that give each'
            f" number of stars, {', '.join(shares)}.</p>\n"
        )
    score = _span(overall["score"], 3, ["overall", "score"], "score")
    score_ci = _interval(overall["score_ci"], 3, ["overall", "score_ci"], "score")
    titles = {family["name"]: _title(family) for family in record["families"]}
    worst = titles.get(overall["worst_family"], overall["worst_family"])
    worst_score = _span(overall["worst_score"], 3, ["overall", "worst_score"], "worst_score")
    relative = _span(overall["relative"]["mean_ausc"], 3, ["overall", "relative", "mean_ausc"], "relative_mean_ausc")
    said = (
        f"<p>Score {score} {score_ci} (the mean over the families of their mean skill, each level's clipped to"
        f" [0, 1]); worst family <b>{_e(worst)}</b> ({worst_score}). Robustness relative to its own clean return"
        f" (card-v1's mean AUSC, shown, rating nothing): {relative}.</p>\n"
    )
    overall_bars = ", ".join(f"{k} stars from {t:g}" for k, t in enumerate(SCORE_STARS, start=2))
    family_bars = ", ".join(f"{k} stars {t:g}" for k, t in enumerate(FAMILY_STARS, start=2))
    rule = (
        f"Stars need both the score and every family's score to reach their bar: score {overall_bars}; every family"
        f" at least, for {family_bars}. Skill is (R - R_random) / (R_ref - R_random): 0 plays as a random policy, 1"
        " as the reference. No score or star falls when any mean return rises."
    )
    return f'{head}{chances}{said}<p class="note">{rule}</p>\n</section>\n'


def _ladder_html(record: Mapping[str, Any]) -> str:
    """The ladder's version and hash, and whether it is provisional (calibrated without reference agents)."""
    shown = f"<code>{_e(record['ladder'])}</code>"
    digest = record.get("ladder_sha256")
    if digest:
        shown += f", SHA-256 <code>{_e(digest[:16])}</code>"
    provisional = record.get("provisional")
    if provisional is not None:
        absent = "; ".join(f"no {name}: {why}" for name, why in provisional["absent"].items())
        shown += (
            f" <b>provisional ladder, {_e(provisional['origin'])}</b> (rules {_e(provisional['rules'])}: levels in"
            f" physical units, without reference agents{'; ' + _e(absent) if absent else ''})"
        )
    return shown + " (cards compare only under one ladder and one env)"


def _facts_html(record: Mapping[str, Any]) -> str:
    agent, settings, clean = record["agent"], record["settings"], record["clean"]
    digits = _return_digits(_returns(record))
    seeds = ", ".join(str(s) for s in settings["seeds"])
    rows = [
        ("agent", f"<b>{_e(agent['name'])}</b>"),
        ("source", f"<code>{_e(agent['source'])}</code>"),
        ("SHA-256", f"<code>{_e(agent['sha256'])}</code>" if agent["sha256"] else "n/a"),
        ("detail", _e(agent["detail"])),
        *((("played behind", _e(describe(record["agent_preprocessing"]))),) if "agent_preprocessing" in record else ()),
        ("env", f"<code>{_e(record['env_id'])}</code>"),
        ("severity ladder", _ladder_html(record)),
        ("rlwrappers", _e(record["package_version"])),
        ("card format", f"{_e(record['format'])} version {_e(record['format_version'])}"),
        (
            "seeds",
            f'<span data-path="$.settings.seeds" data-value="{_e(json.dumps(settings["seeds"]))}">{seeds}</span>',
        ),
        ("episodes per seed and arm", _span(settings["episodes"], 0, ["settings", "episodes"], "episodes")),
        ("bootstrap replicates", _span(settings["reps"], 0, ["settings", "reps"], "reps")),
        ("mode", _e(settings["mode"])),
        ("families run", _e(", ".join(settings["families"]) or "none")),
        ("every family of the ladder", "yes" if settings["complete"] else "no"),
        ("deterministic agent", "yes" if settings["deterministic"] else "no"),
        ("random policy's mean return", _span(record["random_return"], digits, ["random_return"], "random_return")),
        *(_references(record, digits) if _graded(record) else ()),
        (
            "clean mean return [95% CI]",
            _span(clean["mean_return"], digits, ["clean", "mean_return"], "clean_mean_return")
            + " "
            + _interval(clean["ci"], digits, ["clean", "ci"], "clean"),
        ),
        *(
            (
                (
                    "clean skill [95% CI]",
                    _span(clean["skill"], 3, ["clean", "skill"], "clean_skill")
                    + " "
                    + _interval(clean["skill_ci"], 3, ["clean", "skill_ci"], "clean_skill"),
                ),
            )
            if _graded(record)
            else ()
        ),
    ]
    body = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>\n" for name, value in rows)
    return f'<table id="facts">\n{body}</table>\n'


def _references(record: Mapping[str, Any], digits: int) -> list[tuple[str, str]]:
    """The facts' rows of the returns skill runs between: where each comes from."""
    reference = _span(record["reference_return"], digits, ["reference_return"], "reference_return")
    return [
        ("random return's source", f"{_e(record['random']['source'])}; {_e(record['random']['protocol'])}"),
        ("reference return (skill 1)", reference),
        ("reference return's source", f"{_e(record['reference']['source'])}; {_e(record['reference']['protocol'])}"),
    ]


def _runs_html(record: Mapping[str, Any]) -> str:
    """A training method's trained agents, each graded alone; empty for a card of one agent."""
    runs = record.get("runs")
    if not runs:
        return ""
    digits = _return_digits([run["clean_mean_return"] for run in runs])
    rows = []
    for i, run in enumerate(runs):
        where: list[str | int] = ["runs", i]
        score = _span(run["score"], 3, [*where, "score"], "score", run=i)
        ci = _interval(run["score_ci"], 3, [*where, "score_ci"], "score", run=i)
        clean = _span(run["clean_mean_return"], digits, [*where, "clean_mean_return"], "clean_mean_return", run=i)
        stars = _stars_cell(run["stars"], [*where, "stars"], run=i)
        rows.append(
            f'<tr data-run="{i}"><td><b>{_e(run["name"])}</b><br><small>{_e(run["detail"])}</small></td>'
            f'<td class="num">{clean}</td><td class="num">{score}<br><small>{ci}</small></td><td>{stars}</td></tr>\n'
        )
    return (
        "<h2>Training runs</h2>\n<p>This card grades a training method: its trained agents (training seeds) played"
        " the same arms, and every number above pools them, the bootstrap resampling the agents before their"
        " episodes (as rliable resamples runs), so the intervals hold the spread over training seeds. Each agent"
        " graded alone:</p>\n"
        '<table id="runs">\n<thead><tr><th>trained agent</th><th>clean mean return</th><th>score [95% CI]</th>'
        f"<th>stars</th></tr></thead>\n<tbody>\n{''.join(rows)}</tbody>\n</table>\n"
    )


def _heat(normalized: float | None) -> str:
    """A cell's background: red at normalized return 0, green at 1."""
    if normalized is None:
        return ""
    hue = 120.0 * min(max(normalized, 0.0), 1.0)
    return f' style="background: hsl({hue:.0f}, 65%, 88%)"'


def _family_row(entry: Mapping[str, Any], graded: bool) -> str:
    """A family's row: per level its skill (graded) or normalized return, then its scores and stars."""
    family, path, parent = entry["family"], entry["path"], entry["parent"]
    data = {"family": family["name"], "parent": parent}
    by_level = {level["level"]: (j, level) for j, level in enumerate(family["levels"])}
    cells = []
    for number in _LEVELS:
        if number not in by_level:
            cells.append(f'<td class="missing" data-level="{number}">not run</td>')
            continue
        j, level = by_level[number]
        where = [*path, "levels", j]
        if graded:
            shown = level["skill"]
            value = _span(shown, 3, [*where, "skill"], "skill", level=number, **data)
            ci = _interval(level["skill_ci"], 3, [*where, "skill_ci"], "skill", level=number, **data)
        else:
            shown = level["normalized"]
            value = _span(shown, 3, [*where, "normalized"], "normalized", level=number, **data)
            ci = _interval(
                level["impact_ci"], 3, [*where, "impact_ci"], "normalized", one_minus=True, level=number, **data
            )
        cells.append(f'<td class="num" data-level="{number}"{_heat(shown)}>{value}<br><small>{ci}</small></td>')
    relative = family["relative"] if graded else family
    ausc_path = [*path, "relative"] if graded else path
    ausc = _span(relative["ausc"], 3, [*ausc_path, "ausc"], "ausc", **data)
    ausc_ci = _interval(relative["ausc_ci"], 3, [*ausc_path, "ausc_ci"], "ausc", **data)
    tolerated = _span(relative["tolerated"], 0, [*ausc_path, "tolerated"], "tolerated", **data)
    stars = _stars_cell(family["stars"], [*path, "stars"], **data)
    head = f"\u21b3 {_e(_title(family))}" if parent else f"<b>{_e(_title(family))}</b>"
    unit = f"<br><small>{_e(family['unit'])}</small>" if family["unit"] else ""
    parent_attribute = f' data-parent="{_e(parent)}"' if parent else ""
    scores = f'<td class="num">{ausc}<br><small>{ausc_ci}</small></td><td class="num">{tolerated}</td>'
    if graded:
        score = _span(family["score"], 3, [*path, "score"], "score", **data)
        score_ci = _interval(family["score_ci"], 3, [*path, "score_ci"], "score", **data)
        scores = f'<td class="num">{score}<br><small>{score_ci}</small></td><td>{stars}</td>{scores}'
    else:
        scores += f"<td>{stars}</td>"
    return (
        f'<tr class="{"sub" if parent else "family"}" data-family="{_e(family["name"])}"{parent_attribute}>'
        f"<th>{head}{unit}</th>{''.join(cells)}{scores}</tr>\n"
    )


def _families_html(record: Mapping[str, Any]) -> str:
    if not record["families"]:
        return "<p>No family of shift was run.</p>\n"
    head = "".join(f"<th>level {number}</th>" for number in _LEVELS)
    graded = _graded(record)
    rows = "".join(_family_row(entry, graded) for entry in _all_families(record))
    if graded:
        return (
            "<p>Per family of shift and severity level, the skill <code>(R - R_random) / (R_ref - R_random)</code> (1:"
            " as the reference return, 0: as a random policy) with its 95% paired-bootstrap interval; then the family's"
            " score (the mean of its levels' skill, each clipped to [0, 1]) with its interval and its stars. The last"
            " two columns are the robustness relative to the agent's own clean return, card-v1's numbers: the area"
            " under the severity curve of <code>1 - impact</code> and the tolerated level (every level up to it keeps"
            f" at least {TOLERATED:g} of the clean return's margin over random). They are shown and rate nothing: an"
            " agent that is poor everywhere loses little against itself. Indented rows are sub-families.</p>\n"
            f'<table id="families">\n<thead><tr><th>family</th>{head}<th>score [95% CI]</th><th>stars</th>'
            "<th>relative AUSC [95% CI]</th><th>relative tolerated level</th></tr></thead>\n<tbody>\n"
            f"{rows}</tbody>\n</table>\n"
        )
    return (
        "<p>Per family of shift and severity level, the normalized return <code>1 - impact</code> (1: as clean, 0: as"
        " a random policy) with its 95% paired-bootstrap interval; then the area under the severity curve (AUSC,"
        f" the mean of the normalized returns clipped to [0, 1]) with its interval, the tolerated level (every level"
        f" up to it keeps a normalized return of at least {TOLERATED:g}) and the stars. Indented rows are"
        " sub-families, scored on their own.</p>\n"
        f'<table id="families">\n<thead><tr><th>family</th>{head}<th>AUSC [95% CI]</th><th>tolerated level</th>'
        f"<th>stars</th></tr></thead>\n<tbody>\n{rows}</tbody>\n</table>\n"
    )


def _levels_html(record: Mapping[str, Any]) -> str:
    if not record["families"]:
        return ""
    digits = _return_digits(_returns(record))
    graded = _graded(record)
    rows = []
    for entry in _all_families(record):
        family, path, parent = entry["family"], entry["path"], entry["parent"]
        data = {"family": family["name"], "parent": parent}
        name = f"{_e(entry['parent_title'])} / {_e(_title(family))}" if parent else _e(_title(family))
        for j, level in _levels(family):
            where, number = [*path, "levels", j], level["level"]
            spec = "<br>".join(f"<code>{_e(s)}</code>" for s in level["spec"]) or "n/a"
            impact = _span(level["impact"], 3, [*where, "impact"], "impact", level=number, **data)
            ci = _interval(level["impact_ci"], 3, [*where, "impact_ci"], "impact", level=number, **data)
            skill = []
            if graded:
                value = _span(level["skill"], 3, [*where, "skill"], "skill", level=number, **data)
                skill_ci = _interval(level["skill_ci"], 3, [*where, "skill_ci"], "skill", level=number, **data)
                skill = [f"{value}<br><small>{skill_ci}</small>" if skill_ci else value]
            cells = [
                _span(level["mean_return"], digits, [*where, "mean_return"], "mean_return", level=number, **data),
                *skill,
                f"{impact}<br><small>{ci}</small>" if ci else impact,
                _span(level["normalized"], 3, [*where, "normalized"], "normalized", level=number, **data),
                _span(level["flip_rate"], 3, [*where, "flip_rate"], "flip_rate", level=number, **data),
            ]
            rows.append(
                f'<tr data-family="{_e(family["name"])}" data-level="{number}"><td>{name}</td><td class="num">'
                f"{_span(number, 0, [*where, 'level'], 'level', level=number, **data)}</td><td>{spec}</td>"
                + "".join(f'<td class="num">{c}</td>' for c in cells)
                + "</tr>\n"
            )
    skill_words = ", the skill with its interval" if graded else ""
    skill_head = "<th>skill [95% CI]</th>" if graded else ""
    relative = " (relative to the clean return)" if graded else ""
    return (
        "<h2>Every level</h2>\n<p>The wrapper specs each level ran, the mean return over every seed and episode"
        f"{skill_words}, the impact <code>(R_clean - R_level) / (R_clean - R_random)</code> with its interval, and"
        " the flip rate (the share of decisions where the shift changed the agent's action on the same observation),"
        " where the family has one.</p>\n"
        '<table id="levels">\n<thead><tr><th>family</th><th>level</th><th>spec</th><th>mean return</th>'
        f"{skill_head}<th>impact{relative} [95% CI]</th><th>normalized return</th><th>flip rate</th></tr></thead>\n"
        "<tbody>\n" + "".join(rows) + "</tbody>\n</table>\n"
    )


def _reproducibility_row(name: str, values: Mapping[str, float], path: Sequence[str | int], **data: Any) -> str:
    digits = _return_digits(values.values())
    cells = "".join(
        f'<td class="num">{_span(values[k], digits, [*path, k], k, **data)}</td>' for k in ("mad", "iqr", "lcb")
    )
    return f"<tr><td>{name}</td>{cells}</tr>\n"


def _reproducibility_html(record: Mapping[str, Any]) -> str:
    rows = [
        _reproducibility_row(
            "clean (every family's clean arm)",
            record["clean"]["reproducibility"],
            ["clean", "reproducibility"],
            arm="clean",
        )
    ]
    for entry in _all_families(record):
        family, path, parent = entry["family"], entry["path"], entry["parent"]
        if family["reproducibility"] is None:
            continue
        name = f"{_e(entry['parent_title'])} / {_e(_title(family))}" if parent else _e(_title(family))
        for arm in ("clean", "level3"):
            rows.append(
                _reproducibility_row(
                    f"{name}, {'clean' if arm == 'clean' else 'level 3'}",
                    family["reproducibility"][arm],
                    [*path, "reproducibility", arm],
                    family=family["name"],
                    parent=parent,
                    arm=arm,
                )
            )
    return (
        "<h2>Reproducibility</h2>\n<p>The spread of the returns (Flageat et al. 2023): the MAD <code>median(|R -"
        " median R|)</code>, the IQR <code>Q3 - Q1</code>, and a lower confidence bound of the return"
        " (<code>LCB = performance - alpha * dispersion</code>).</p>\n"
        '<table id="reproducibility">\n<thead><tr><th>arm</th><th>MAD</th><th>IQR</th><th>LCB</th></tr></thead>\n'
        "<tbody>\n" + "".join(rows) + "</tbody>\n</table>\n"
    )


def _interventions_html(record: Mapping[str, Any]) -> str:
    interventions = record["interventions"]
    title = "<h2>Interventions (shown, not rated)</h2>\n"
    if not interventions:
        why = "this env's state cannot be written" if record["settings"]["complete"] else "a card of some families"
        return f"{title}<p>None were made ({why}).</p>\n"
    digits = _return_digits(_returns(record))
    graded = _graded(record)
    rows = []
    for i, x in enumerate(interventions):
        where: list[str | int] = ["interventions", i]
        spec = "<br>".join(f"<code>{_e(s)}</code>" for s in x["spec"]) or "n/a"
        impact = _span(x["impact"], 3, [*where, "impact"], "impact")
        ci = _interval(x["impact_ci"], 3, [*where, "impact_ci"], "impact")
        skill = ""
        if graded:
            value = _span(x["skill"], 3, [*where, "skill"], "skill")
            skill_ci = _interval(x["skill_ci"], 3, [*where, "skill_ci"], "skill")
            skill = (
                f'<td class="num">{value}<br><small>{skill_ci}</small></td>'
                if skill_ci
                else f'<td class="num">{value}</td>'
            )
        rows.append(
            f'<tr data-intervention="{_e(x["name"])}"><td>{_e(x["name"])}</td><td>{_e(x["doc"])}</td><td>{spec}</td>'
            f'<td class="num">{_span(x["mean_return"], digits, [*where, "mean_return"], "mean_return")}</td>{skill}'
            f'<td class="num">{f"{impact}<br><small>{ci}</small>" if ci else impact}</td></tr>\n'
        )
    return (
        f"{title}<p>Changes made once to the env's state mid-episode, after which the episode plays on from the"
        f" changed state: their mean return{', skill' if graded else ''} and impact against the same clean episodes,"
        " shown for what they say, part of no score.</p>\n"
        '<table id="interventions">\n<thead><tr><th>intervention</th><th>what it does</th><th>spec</th>'
        f"<th>mean return</th>{'<th>skill [95% CI]</th>' if graded else ''}<th>impact [95% CI]</th></tr></thead>\n"
        f"<tbody>\n{''.join(rows)}</tbody>\n</table>\n"
    )


def _series(values: Sequence[float | None]) -> np.ndarray[Any, Any]:
    """A series with null as NaN (matplotlib leaves a gap)."""
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _severity_figure(record: Mapping[str, Any]) -> Figure | None:
    """Skill (or normalized return) against level, a line and interval band per family; a panel per sub-families."""
    graded = _graded(record)
    key = "skill" if graded else "normalized"
    panels = [("families", list(record["families"]))]
    panels += [(f"{_title(f)}: sub-families", list(f["sub_families"])) for f in record["families"] if f["sub_families"]]
    panels = [(t, [f for f in fs if any(x[key] is not None for x in f["levels"])]) for t, fs in panels]
    panels = [(t, fs) for t, fs in panels if fs]
    if not panels:
        return None
    fig, axes = figure_row(len(panels), 5.2, 3.8)
    for ax, (title, families) in zip(axes, panels, strict=True):
        for i, family in enumerate(families):
            levels = [level for _, level in _levels(family)]
            xs = [level["level"] for level in levels]
            colour = palette_colour(i)
            ax.plot(xs, _series([x[key] for x in levels]), marker="o", color=colour, label=_title(family))
            if graded:
                cis = [x["skill_ci"] or (None, None) for x in levels]
                low, high = _series([c[0] for c in cis]), _series([c[1] for c in cis])
            else:
                cis = [x["impact_ci"] or (None, None) for x in levels]
                low, high = 1.0 - _series([c[1] for c in cis]), 1.0 - _series([c[0] for c in cis])
            ax.fill_between(xs, low, high, color=colour, alpha=0.15, linewidth=0)
        ax.axhline(1.0 if graded else TOLERATED, color="grey", linestyle=":", linewidth=1.0)
        ax.axhline(0.0, color="grey", linewidth=0.8)
        ax.set_xticks(list(_LEVELS))
        ax.set_xlabel("severity level")
        ax.set_ylabel("skill" if graded else "normalized return (1 - impact)")
        ax.set_title(title, fontsize="medium")
        ax.legend(fontsize="x-small")
        ax.grid(True, alpha=0.3)
    return fig


def _recovery_figure(recovery: Mapping[str, Any]) -> Figure:
    """The clean arm's mean reward, its 5th-percentile band and the shifted arm's mean per step; the shift shaded."""
    fig, ax = figure(7.5, 3.6)
    for key, label, colour, line in (
        ("clean_mean", "clean mean", "black", "-"),
        ("band", "recovery band (clean 5th percentile)", "grey", "--"),
        ("shifted_mean", "shifted mean", "tab:red", "-"),
    ):
        values = _series(recovery[key])
        ax.plot(np.arange(len(values)), values, label=label, color=colour, linestyle=line, linewidth=1.2)
    ax.axvspan(recovery["start"], recovery["stop"], color="tab:orange", alpha=0.15, label="shift")
    ax.set_xlabel("step")
    ax.set_ylabel("reward")
    ax.legend(fontsize="x-small")
    return fig


def _png_data(fig: Figure) -> str:
    """``fig`` as base64 PNG, without the software tag, so equal cards give equal pages."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _severity_html(record: Mapping[str, Any]) -> str:
    fig = _severity_figure(record)
    if fig is None:
        return "<h2>Severity curves</h2>\n<p>No family has normalized returns to draw.</p>\n"
    if _graded(record):
        caption = (
            "Skill against severity level per family, with the 95% interval shaded; the dotted line is the reference"
            " return (1), the solid one a random policy (0)."
        )
    else:
        caption = (
            "Normalized return against severity level per family, with the 95% interval shaded; the dotted line is"
            f" the tolerated threshold {TOLERATED:g}, the solid one a random policy (0)."
        )
    return "<h2>Severity curves</h2>\n" + figures_html({"severity curves": (caption, _png_data(fig))})


def _recovery_html(record: Mapping[str, Any]) -> str:
    recovery = record["recovery"]
    if recovery is None:
        return (
            "<h2>Recovery</h2>\n<p>Recovery after a shift that ends mid-episode was not measured for this card.</p>\n"
        )
    spec = ", ".join(f"<code>{_e(s)}</code>" for s in recovery["spec"]) or "n/a"
    median = recovery["median_steps"]
    steps = (
        f"median {_span(median, 1, ['recovery', 'median_steps'], 'median_steps')} steps to recover"
        if median is not None
        else "no median: most episodes never recovered"
    )
    never = _span(recovery["never_share"], 3, ["recovery", "never_share"], "never_share")
    caption = (
        "Per step, the clean arm's mean reward, the recovery band (the 5th percentile of the clean episodes' trailing"
        " mean reward) and the shifted arm's mean reward; the shift's window is shaded."
    )
    return (
        f"<h2>Recovery</h2>\n<p>Shift {spec} from step {_span(recovery['start'], 0, ['recovery', 'start'], 'start')}"
        f" to {_span(recovery['stop'], 0, ['recovery', 'stop'], 'stop')}, over"
        f" {_span(recovery['episodes'], 0, ['recovery', 'episodes'], 'episodes')} episodes: {steps}; share that"
        f" never recovered within {_span(recovery['horizon'], 0, ['recovery', 'horizon'], 'horizon')} steps:"
        f" {never}. An episode has recovered from the first step after the shift from which its trailing mean reward"
        f" (window {_span(recovery['window'], 0, ['recovery', 'window'], 'window')}) stays at or above the band for"
        " a window.</p>\n" + figures_html({"recovery": (caption, _png_data(_recovery_figure(recovery)))})
    )


def _episode_frames(frames: Mapping[str, Any], key: str) -> list[np.ndarray[Any, Any]]:
    """``frames[key]`` as HxWx3 uint8 images, each checked."""
    if key not in frames:
        raise InvalidArgument(f"`frames` must hold {key!r}, received the keys {sorted(map(str, frames))}")
    items = frames[key]
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise InvalidType(f"`frames[{key!r}]` must be a sequence of HxWx3 uint8 images, received {_short(items)}")
    images = [np.asarray(x) for x in items]
    if not images:
        raise InvalidArgument(f"`frames[{key!r}]` must hold at least one image, received none")
    for i, image in enumerate(images):
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8 or 0 in image.shape:
            raise InvalidArgument(
                f"`frames[{key!r}][{i}]` must be an HxWx3 uint8 image, received shape {image.shape} and dtype"
                f" {image.dtype}"
            )
    return images


def _fitted(image_module: Any, frame: np.ndarray[Any, Any]) -> Any:
    """A frame as a PIL image: tiny ones enlarged by a whole factor, tall ones shrunk to the animation's height."""
    picture = image_module.fromarray(frame)
    height, width = frame.shape[:2]
    if height > _GIF_HEIGHT:
        size = (max(1, round(width * _GIF_HEIGHT / height)), _GIF_HEIGHT)
        return picture.resize(size, image_module.Resampling.BOX)
    factor = max(1, (_GIF_HEIGHT // 2) // height)
    return picture.resize((width * factor, height * factor), image_module.Resampling.NEAREST) if factor > 1 else picture


def _episodes_html(frames: Any) -> str:
    """The clean and the worst shifted episode side by side as an embedded animated GIF."""
    if not isinstance(frames, Mapping):
        raise InvalidType(
            "`frames` must map 'clean' and 'worst' to sequences of HxWx3 uint8 images and 'worst_label' to a string,"
            f" received {type(frames).__name__}"
        )
    clean, worst = _episode_frames(frames, "clean"), _episode_frames(frames, "worst")
    label = frames.get("worst_label")
    if not isinstance(label, str):
        raise InvalidType(f"`frames['worst_label']` must be a string naming the worst shift, received {_short(label)}")
    image_module = require("PIL.Image", purpose="the episode animation")
    length = max(len(clean), len(worst))
    stride = math.ceil(length / _GIF_FRAMES)
    pictures = []
    for t in range(0, length, stride):
        left, right = (_fitted(image_module, side[min(t, len(side) - 1)]) for side in (clean, worst))
        canvas = image_module.new(
            "RGB", (left.width + _GIF_GAP + right.width, max(left.height, right.height)), (255, 255, 255)
        )
        canvas.paste(left, (0, 0))
        canvas.paste(right, (left.width + _GIF_GAP, 0))
        pictures.append(canvas.convert("P", palette=image_module.Palette.ADAPTIVE, colors=255))
    buffer = io.BytesIO()
    pictures[0].save(
        buffer, format="GIF", save_all=True, append_images=pictures[1:], duration=_GIF_MILLISECONDS, loop=0
    )
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    every = f" Every {stride}th step is shown." if stride > 1 else ""
    caption = (
        f"Left: a clean episode ({len(clean)} steps). Right: the worst shifted episode, {label} ({len(worst)}"
        f" steps). The shorter one holds its last frame.{every}"
    )
    return (
        '<h2>Episodes</h2>\n<figure><img id="episodes" alt="the clean and the worst shifted episode" '
        f'src="data:image/gif;base64,{data}"><figcaption>{_e(caption)}</figcaption></figure>\n'
    )


def _badge_img(record: Mapping[str, Any], **data: Any) -> str:
    """The badge as an ``<img>`` with a data URI."""
    svg = base64.b64encode(_badge(record).encode("utf-8")).decode("ascii")
    alt = f"robustness: {_rating_words(record)}"
    cells = "".join(f' data-{k}="{_e(v)}"' for k, v in data.items())
    return f'<img class="badge" alt="{_e(alt)}"{cells} src="data:image/svg+xml;base64,{svg}">'


def _timings_html(record: Mapping[str, Any]) -> str:
    timings = {k: _span(v, 0 if k == "agent_steps" else 1, ["timings", k], k) for k, v in record["timings"].items()}
    return (
        f'<p class="note" id="timings">Ran {timings["agent_steps"]} agent steps in {timings["seconds"]} s'
        f" ({timings['steps_per_second']} steps/s): the only numbers that may differ between two identical runs."
        f" Written by rlwrappers {_e(record['package_version'])}.</p>\n"
    )


def robustness_card_html(record: Mapping[str, Any], frames: Mapping[str, Any] | None = None) -> str:
    """The robustness card as one self-contained HTML page, which opens offline.

    It shows the rating (stars, or "not rated" and why), the agent, env, ladder and settings, the family x level
    table of normalized returns with their intervals (sub-families as rows of their own), AUSC, tolerated level and
    stars per family, every level's spec, return, impact and flip rate, the reproducibility numbers, the severity
    curves, the recovery plot and the interventions (shown, not rated). Figures are embedded PNGs, the badge an
    embedded SVG; nothing refers outside the page.

    Args:
        record: the robustness card's record; it is checked first (:func:`validate_robustness_card`).
        frames: when given, ``{"clean": [HxWx3 uint8, ...], "worst": [...], "worst_label": str}``: a clean episode
            and the worst shifted one, shown side by side as an embedded animated GIF.

    Raises:
        InvalidArgument: the record is not a valid robustness card, or a frame is not an HxWx3 uint8 image.
        InvalidType: ``frames`` is not such a mapping.
    """
    validate_robustness_card(record)
    return _card_page(record, frames)


def _card_page(record: Mapping[str, Any], frames: Mapping[str, Any] | None) -> str:
    episodes = _episodes_html(frames) if frames is not None else ""
    title = f"Robustness card: {record['agent']['name']} on {record['env_id']}"
    thresholds = ", ".join(f"{stars} stars from {t:g}" for stars, t in enumerate(STAR_THRESHOLDS, start=2))
    family_stars = (
        f"Stars of a family from its score alone: 1 star below {FAMILY_STARS[0]:g}, "
        + ", ".join(f"{stars} stars from {t:g}" for stars, t in enumerate(FAMILY_STARS, start=2))
        if _graded(record)
        else f"Stars from the AUSC: 1 star below {STAR_THRESHOLDS[0]:g}, {thresholds}"
    )
    body = (
        f"<style>{_CARD_STYLE}</style>\n"
        + f"<p>{_badge_img(record)}</p>\n"
        + _rating_html(record)
        + "<h2>What was measured</h2>\n"
        + _facts_html(record)
        + _runs_html(record)
        + "<h2>Families of shift</h2>\n"
        + _families_html(record)
        + f'<p class="note">{family_stars}.</p>\n'
        + _severity_html(record)
        + _levels_html(record)
        + _reproducibility_html(record)
        + _recovery_html(record)
        + _interventions_html(record)
        + episodes
        + _timings_html(record)
    )
    return html_page(title, body)


def _rating_words(record: Mapping[str, Any]) -> str:
    """``3/5``, or ``not rated``."""
    stars = record["overall"]["stars"]
    return "not rated" if stars is None else f"{stars}/5"


def _text_width(text: str) -> int:
    """About how wide ``text`` is in 11px Verdana, shields.io's font."""
    return round(sum(7.5 if c.isupper() or c in "mw%" else 4.0 if c in " ./|" else 6.5 for c in text)) + 10


def robustness_badge_svg(record: Mapping[str, Any]) -> str:
    """A flat badge, shields.io style: "robustness | 3/5" coloured by the stars, or "robustness | not rated" in grey.

    Standalone SVG (valid XML, no external reference), with a title and an aria-label saying the rating.
    """
    validate_robustness_card(record)
    return _badge(record)


def _badge(record: Mapping[str, Any]) -> str:
    stars = record["overall"]["stars"]
    label, value = "robustness", _rating_words(record)
    colour = _UNRATED_COLOUR if stars is None else _BADGE_COLOURS[stars]
    left, right = _text_width(label), _text_width(value)
    width = left + right
    words = html.escape(f"{label}: {value}")
    return f"""<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" viewBox="0 0 {width} 20" \
role="img" aria-label="{words}">
<title>{words}</title>
<linearGradient id="shine" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/>\
<stop offset="1" stop-opacity=".1"/></linearGradient>
<clipPath id="round"><rect width="{width}" height="20" rx="3" fill="#fff"/></clipPath>
<g clip-path="url(#round)">
<rect width="{left}" height="20" fill="#555"/>
<rect x="{left}" width="{right}" height="20" fill="{colour}"/>
<rect width="{width}" height="20" fill="url(#shine)"/>
</g>
<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">
<text x="{left / 2:g}" y="15" fill="#010101" fill-opacity=".3">{label}</text>
<text x="{left / 2:g}" y="14">{label}</text>
<text x="{left + right / 2:g}" y="15" fill="#010101" fill-opacity=".3">{html.escape(value)}</text>
<text x="{left + right / 2:g}" y="14">{html.escape(value)}</text>
</g>
</svg>
"""


def _same(records: Sequence[Mapping[str, Any]], labels: Sequence[str], argument: str) -> None:
    """Refuses cards of different envs, ladder versions or ladders (their hash), naming the two that differ."""
    digests = [_ladder_digest(record) for record in records]
    for key, what, values in (
        ("env_id", "env", [record["env_id"] for record in records]),
        ("ladder", "ladder version", [record["ladder"] for record in records]),
        ("ladder_sha256", "ladder", digests),
    ):
        first = values[0]
        for label, value in zip(labels, values, strict=True):
            if value != first:
                raise InvalidArgument(
                    f"`{argument}` must be robustness cards of one {what}: {labels[0]} has {key} {first!r} but"
                    f" {label} has {value!r}; cards compare only within one env and one ladder (version and hash)"
                )


def _ladder_digest(record: Mapping[str, Any]) -> str | None:
    """A card's ladder hash; a card made before cards recorded it used its version's shipped ladder."""
    if "ladder_sha256" in record:
        return str(record["ladder_sha256"])
    from rlwrappers import ladders

    try:
        return ladders.ladder(record["env_id"], record["ladder"]).sha256
    except Error:
        return None


def _ranking(records: Sequence[Mapping[str, Any]]) -> list[tuple[int | None, int]]:
    """``(rank, index)``, best first, equal ones sharing a rank; unrated last (None).

    Cards that grade skill rank by stars, then score, then clean skill: each non-decreasing in every mean return,
    so a dominated agent never ranks above the one that dominates it. Cards of format 1 rank by stars, then mean
    AUSC.
    """

    def key(i: int) -> tuple[bool, int, float, float, str, int]:
        record = records[i]
        overall = record["overall"]
        stars = overall["stars"]
        if _graded(record):
            score, second = overall["score"], record["clean"]["skill"]
        else:
            score, second = overall["mean_ausc"], 0.0
        first = -score if score is not None else math.inf
        return (stars is None, -(stars or 0), first, -second, record["agent"]["name"], i)

    order = sorted(range(len(records)), key=key)
    out: list[tuple[int | None, int]] = []
    for position, i in enumerate(order):
        if records[i]["overall"]["stars"] is None:
            out.append((None, i))
        elif out and out[-1][0] is not None and key(order[position - 1])[:4] == key(i)[:4]:
            out.append((out[-1][0], i))
        else:
            out.append((position + 1, i))
    return out


def _family_columns(records: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``(name, title)`` of every family any card ran, in the order they first appear."""
    seen: dict[str, str] = {}
    for record in records:
        for family in record["families"]:
            seen.setdefault(family["name"], _title(family))
    return list(seen.items())


def _leaderboard_row(rank: int | None, i: int, record: Mapping[str, Any], columns: Sequence[tuple[str, str]]) -> str:
    overall, settings, agent = record["overall"], record["settings"], record["agent"]
    graded = _graded(record)
    main = "score" if graded else "ausc"
    by_name = {family["name"]: (j, family) for j, family in enumerate(record["families"])}
    cells = []
    for name, _ in columns:
        if name not in by_name:
            cells.append(f'<td class="missing" data-family="{_e(name)}">not run</td>')
            continue
        j, family = by_name[name]
        ausc = _span(family[main], 3, ["families", j, main], main, family=name, card=i)
        stars = _stars_cell(family["stars"], ["families", j, "stars"], family=name, card=i)
        cells.append(f'<td class="num" data-family="{_e(name)}">{ausc}<br><small>{stars}</small></td>')
    rating = _stars_cell(overall["stars"], ["overall", "stars"], card=i)
    if overall["stars"] is None:
        why = "clean return not above random" if not record.get("rated", True) else "not every family run"
        rating += f"<br><small>{why}</small>"
    elif graded:
        sure = _span(
            overall["stars_probability"][overall["stars"] - 1],
            2,
            ["overall", "stars_probability", overall["stars"] - 1],
            "stars_probability",
            card=i,
        )
        rating += f"<br><small>P = {sure}</small>"
    if graded:
        score = _span(overall["score"], 3, ["overall", "score"], "score", card=i)
        score_ci = _interval(overall["score_ci"], 3, ["overall", "score_ci"], "score", card=i)
        relative = _span(
            overall["relative"]["mean_ausc"], 3, ["overall", "relative", "mean_ausc"], "relative_mean_ausc", card=i
        )
        mean = f'{score}<br><small>{score_ci}</small></td><td class="num">{relative}'
    else:
        mean = _span(overall["mean_ausc"], 3, ["overall", "mean_ausc"], "mean_ausc", card=i)
    run = f"{settings['mode']}, {len(settings['seeds'])} seeds x {settings['episodes']} episodes"
    place = str(rank) if rank is not None else "\u2013"
    return (
        f'<tr data-card="{i}" data-rank="{rank if rank is not None else ""}"><td class="rank">{place}</td>'
        f"<td><b>{_e(agent['name'])}</b><br><small>{_e(agent['source'])}</small></td>"
        f'<td>{_badge_img(record, card=i)}</td><td>{rating}</td><td class="num">{mean}</td>{"".join(cells)}'
        f'<td class="note">{_e(run)}; rlwrappers {_e(record["package_version"])}</td></tr>\n'
    )


def robustness_leaderboard_html(records: Sequence[Mapping[str, Any]]) -> str:
    """One self-contained page ranking robustness cards of one env and one ladder version.

    Cards rank by overall stars, then mean AUSC (equal ones share a rank); those not rated come last. A table gives
    each agent's badge, rating and mean AUSC, and per family its AUSC and stars. On the page, ``data-card`` is a
    card's index in ``records``.

    Raises:
        InvalidArgument: ``records`` is empty, a record is not a valid robustness card, or two cards differ in env
            or ladder version (the message names both values).
    """
    if isinstance(records, Mapping) or not isinstance(records, Sequence):
        raise InvalidType(f"`records` must be a sequence of robustness cards' records, received {_short(records)}")
    if not records:
        raise InvalidArgument("`records` must hold at least one robustness card, received none")
    for i, record in enumerate(records):
        try:
            validate_robustness_card(record)
        except (InvalidArgument, InvalidType) as exc:
            raise InvalidArgument(f"`records[{i}]`: {exc}") from None
    return _leaderboard(records, [f"records[{i}]" for i in range(len(records))], "records")


def _leaderboard(records: Sequence[Mapping[str, Any]], labels: Sequence[str], argument: str) -> str:
    _same(records, labels, argument)
    columns = _family_columns(records)
    rows = "".join(_leaderboard_row(rank, i, records[i], columns) for rank, i in _ranking(records))
    graded = _graded(records[0])  # one ladder version, so one format
    measure = "score" if graded else "AUSC"
    heads = "".join(
        f'<th data-family="{_e(name)}">{_e(title)}<br><small>{measure}, stars</small></th>' for name, title in columns
    )
    totals = "<th>score [95% CI]</th><th>relative mean AUSC</th>" if graded else "<th>mean AUSC</th>"
    ranked = (
        "ranked by overall stars, then by score, then by clean skill (each rises with every mean return, so no agent"
        " ranks above one that returns at least as much everywhere); cards not rated (some family not run) come last."
        " Per family: its score (mean clipped skill) and its stars. The relative mean AUSC, card-v1's robustness"
        " against the agent's own clean return, is shown and ranks nothing."
        if graded
        else "ranked by overall stars, then by mean AUSC; cards not rated (some family not run, or a clean return"
        " not above a random policy's) come last. Per family: the area under the severity curve and its stars."
    )
    runs = {(r["settings"]["mode"], tuple(r["settings"]["seeds"]), r["settings"]["episodes"]) for r in records}
    differ = (
        '<p class="note" id="settings-differ">These cards ran with different modes, seeds or episodes: their'
        " numbers carry different noise.</p>\n"
        if len(runs) > 1
        else ""
    )
    env, ladder = records[0]["env_id"], records[0]["ladder"]
    body = (
        f"<style>{_CARD_STYLE}body {{ max-width: 100rem; }}</style>\n"
        f"<p>{len(records)} robustness cards of <code>{_e(env)}</code> on severity ladder <code>{_e(ladder)}</code>,"
        f" {ranked}</p>\n"
        + differ
        + '<div style="overflow-x: auto">\n<table id="leaderboard">\n'
        + "<thead><tr><th>rank</th><th>agent</th><th>badge</th><th>rating</th>"
        f"{totals}{heads}<th>run</th></tr></thead>\n<tbody>\n{rows}</tbody>\n</table>\n</div>\n"
    )
    return html_page(f"Robustness leaderboard: {env} ({ladder})", body)


def write_robustness_leaderboard(card_dirs: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str]) -> Path:
    """Reads robustness cards (each a card folder or its card.json) and writes ``leaderboard.html`` into ``out_dir``.

    The page is :func:`robustness_leaderboard_html`'s; it is written atomically, and ``out_dir`` created if needed.

    Returns:
        The path of ``leaderboard.html``.

    Raises:
        InvalidArgument: ``card_dirs`` is empty, a card is damaged, or two cards differ in env or ladder version
            (the message names both cards and values).
        MissingFile: a folder holds no card.json.
    """
    if isinstance(card_dirs, (str, os.PathLike)) or not isinstance(card_dirs, Sequence):
        raise InvalidType(f"`card_dirs` must be a sequence of robustness card folders, received {_short(card_dirs)}")
    if not card_dirs:
        raise InvalidArgument("`card_dirs` must name at least one robustness card, received none")
    seen: dict[str, str] = {}
    for path in card_dirs:
        folder = os.path.realpath(path)
        if os.path.basename(folder) == CARD_FILE:  # a card's file names its folder's card
            folder = os.path.dirname(folder)
        if folder in seen:
            raise InvalidArgument(
                f"`card_dirs` names one card twice, as {seen[folder]!r} and {str(path)!r}; a leaderboard ranks each"
                " card once"
            )
        seen[folder] = str(path)
    records = [read_robustness_card(path) for path in card_dirs]
    page = _leaderboard(records, [repr(str(path)) for path in card_dirs], "card_dirs")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / LEADERBOARD_FILE
    _write_atomically(path, page)
    return path
