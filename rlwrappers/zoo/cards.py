"""Reading the cards of the zoo's agents and teams (one JSON file per entry, named by the entry)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlwrappers.error import UnknownName, did_you_mean

__all__ = ["find_card", "read_cards"]


def read_cards(directory: Path) -> dict[str, dict[str, Any]]:
    """The cards (``<name>.json``) in ``directory``, by name, sorted."""
    paths = sorted(directory.glob("*.json"), key=lambda path: path.stem)
    return {path.stem: json.loads(path.read_text()) for path in paths}


def find_card(all_cards: Mapping[str, dict[str, Any]], name: str, what: str) -> dict[str, Any]:
    """The card ``name`` of ``all_cards``; ``what`` says what the names are and where to list them."""
    if name not in all_cards:
        raise UnknownName(f"`name` {name!r} is not {what}." + did_you_mean(name, all_cards))
    return all_cards[name]
