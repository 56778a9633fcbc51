"""The robustness card's pages in a real browser: headless Chromium (Debian's) driven by playwright.

Every image must load, nothing may be logged as an error, no request may leave the page's folder, and the rating
and every number a table shows must equal the record's. The browser is the system one (``chromium``); playwright's
own downloads are never used. Without it the test fails, saying how to install it: it must not skip in CI.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers_robustness_cards import cartpole, corruptions, frames, graded, subset, unrated, variant

from rlwrappers.report.card import write_robustness_card, write_robustness_leaderboard

pytestmark = pytest.mark.slow

INSTALL = (
    "the browser tests of the robustness card need Debian's Chromium: install it with"
    " `apt-get install -y chromium` (scripts/test.sh does), and playwright with `pip install 'rlwrappers[test]'`"
    " (never `playwright install`)"
)

#: What the page shows: every image, every number carrying a data-path, the rating, and digits outside them.
READ_PAGE = """() => {
  const rating = document.querySelector('#rating');
  const stray = Array.from(document.querySelectorAll('td.num')).filter(td => {
    const copy = td.cloneNode(true);
    copy.querySelectorAll('[data-path]').forEach(e => e.remove());
    return /[0-9]/.test(copy.textContent.replaceAll('/5', ''));  // stars read n/5
  }).map(td => td.textContent);
  return {
    images: Array.from(document.images).map(i => ({alt: i.alt, complete: i.complete, width: i.naturalWidth})),
    numbers: Array.from(document.querySelectorAll('[data-path]')).map(e => ({
      path: e.dataset.path, value: e.dataset.value, transform: e.dataset.transform || null,
      card: e.dataset.card || null, text: e.textContent, shown: e.getClientRects().length > 0,
    })),
    rating: rating && {stars: rating.dataset.stars, text: document.querySelector('#rating-text').textContent},
    ranks: Array.from(document.querySelectorAll('#leaderboard tbody tr')).map(r => r.dataset.card),
    stray: stray,
  };
}"""


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail(f"no `chromium` on PATH: {INSTALL}")
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(f"playwright is not installed: {INSTALL}")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


def visit(browser: Any, path: Path) -> dict[str, Any]:
    """Opens ``path`` and returns what it shows; fails on a console error, a page error or an outside request."""
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url[:80]}"))

    def only_local(route: Any) -> None:
        if route.request.url.startswith(("file:", "data:")):
            route.continue_()
        else:
            problems.append(f"request outside the page: {route.request.url}")
            route.abort()

    page.route("**/*", only_local)
    page.goto(path.as_uri(), wait_until="load")
    shown = page.evaluate(READ_PAGE)
    page.close()
    assert not problems, problems
    assert shown["images"], f"{path.name} shows no image"
    for image in shown["images"]:
        assert image["complete"] and image["width"] > 0, f"{path.name}: the image {image['alt']!r} did not load"
    assert not shown["stray"], f"numbers in table cells that do not come from the record: {shown['stray']}"
    return dict(shown)


def resolve(record: Any, path: str) -> Any:
    node = record
    for part in path.removeprefix("$").replace("[", ".[").split(".")[1:]:
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    return node


def check_numbers(shown: dict[str, Any], records: list[dict[str, Any]]) -> set[str]:
    """Each number's exact value is the record's, and its text that value rounded."""
    for number in shown["numbers"]:
        record = records[int(number["card"] or 0)]
        expected = resolve(record, number["path"])
        if number["transform"] == "one-minus":
            expected = 1.0 - expected
        assert json.loads(number["value"]) == expected, number
        assert number["shown"], f"{number['path']} is hidden"
        text = number["text"]
        if isinstance(expected, list):
            assert text == ", ".join(map(str, expected)), number
            continue
        decimals = len(text.partition(".")[2])
        assert abs(float(text) - expected) <= 0.5 * 10**-decimals + 1e-9, number
    return {n["path"] for n in shown["numbers"]}


def expected_paths(record: dict[str, Any]) -> set[str]:
    """The paths of every level's normalized return and impact, and every family's AUSC and stars, that are rated.

    In format 2, also each level's skill and each family's score; the AUSC and tolerated level are relative ones.
    """
    version = record["format_version"]
    paths = set()
    for i, family in enumerate(record["families"]):
        entries = [(f"$.families[{i}]", family)]
        entries += [(f"$.families[{i}].sub_families[{k}]", s) for k, s in enumerate(family["sub_families"] or ())]
        for where, entry in entries:
            if version == 1:
                paths |= {f"{where}.{key}" for key in ("ausc", "stars", "tolerated") if entry[key] is not None}
            else:
                paths |= {f"{where}.score", f"{where}.stars", f"{where}.relative.ausc", f"{where}.relative.tolerated"}
                paths |= {f"{where}.levels[{j}].skill" for j in range(len(entry["levels"]))}
            for j, level in enumerate(entry["levels"]):
                paths |= {f"{where}.levels[{j}].{key}" for key in ("normalized", "impact", "mean_return", "flip_rate")}
                paths -= {
                    f"{where}.levels[{j}].{key}" for key in ("normalized", "impact", "flip_rate") if level[key] is None
                }
    return paths


def test_the_card_pages_load_and_show_the_records_numbers(browser: Any, tmp_path: Path) -> None:
    cards = {"cartpole": cartpole(), "subset": subset(), "corruptions": corruptions(), "unrated": unrated()}
    cards.update({f"{name}-v2": graded(cards[name]) for name in ("cartpole", "subset", "corruptions")})
    animation = {"clean": frames(12), "worst": frames(8, seed=3), "worst_label": "fog, level 5"}
    for name, record in cards.items():
        out = write_robustness_card(record, tmp_path / name, animation if name.startswith("corruptions") else None)
        shown = visit(browser, out / "card.html")
        stars = record["overall"]["stars"]
        assert shown["rating"] == {"stars": str(stars) if stars else "", "text": f"{stars}/5" if stars else "not rated"}
        paths = check_numbers(shown, [record])
        assert expected_paths(record) <= paths, sorted(expected_paths(record) - paths)
        # badge, severity curves (none when nothing is rated), recovery, animation
        count = 1 + record.get("rated", True) + (record["recovery"] is not None) + name.startswith("corruptions")
        assert len(shown["images"]) == count, shown["images"]


def test_the_leaderboard_loads_and_shows_each_cards_numbers(browser: Any, tmp_path: Path) -> None:
    best = cartpole()
    league = [subset(), variant(best, "a2c-CartPole-v1", stars=1, mean_ausc=0.5), best, unrated()]
    dirs = [write_robustness_card(record, tmp_path / str(i)) for i, record in enumerate(league)]
    shown = visit(browser, write_robustness_leaderboard(dirs, tmp_path / "board"))
    assert shown["ranks"] == ["2", "1", "0", "3"]
    assert len(shown["images"]) == len(league)
    paths = check_numbers(shown, league)
    assert {f"$.families[{i}].ausc" for i in range(len(best["families"]))} <= paths
    league = [graded(record) for record in (subset(), best)]
    dirs = [write_robustness_card(record, tmp_path / f"v2-{i}") for i, record in enumerate(league)]
    shown = visit(browser, write_robustness_leaderboard(dirs, tmp_path / "board-v2"))
    assert shown["ranks"] == ["1", "0"]
    paths = check_numbers(shown, league)
    assert {f"$.families[{i}].score" for i in range(len(best["families"]))} <= paths
