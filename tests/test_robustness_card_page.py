"""The robustness card's files: the record's schema, card.json, the page, the badge and the leaderboard."""

from __future__ import annotations

import copy
import json
import math
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from helpers_robustness_cards import cartpole, corruptions, frames, graded, subset, unrated, variant

from rlwrappers.error import InvalidArgument, InvalidType, MissingFile
from rlwrappers.report.card import (
    read_robustness_card,
    robustness_badge_svg,
    robustness_card_html,
    robustness_card_schema,
    robustness_leaderboard_html,
    validate_robustness_card,
    write_robustness_card,
    write_robustness_leaderboard,
)

SVG = "{http://www.w3.org/2000/svg}"


class _Resources(HTMLParser):
    """Every src and href of a page, and its img tags and data-path elements."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str, str]] = []
        self.images: list[dict[str, str | None]] = []
        self.numbers: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.links += [(tag, k, v or "") for k, v in attrs if k in ("src", "href", "xlink:href", "action")]
        if tag == "img":
            self.images.append(found)
        if found.get("data-path"):
            self.numbers.append({k: v or "" for k, v in attrs})

    @property
    def paths(self) -> list[str]:
        return [n["data-path"] for n in self.numbers]


def parsed(page: str) -> _Resources:
    parser = _Resources()
    parser.feed(page)
    return parser


def assert_self_contained(page: str) -> None:
    resources = parsed(page)
    for tag, attribute, value in resources.links:
        assert value.startswith(("data:", "#")), f"<{tag} {attribute}={value[:60]!r}> refers outside the page"
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", page)
    assert "url(http" not in page and "@import" not in page
    assert resources.images, "the page has no image"
    for image in resources.images:
        assert str(image.get("src")).startswith("data:image/"), image.get("alt")


def resolve(record: Any, path: str) -> Any:
    """The value at a JSON path ``$.a[0].b``."""
    assert path.startswith("$"), path
    node = record
    for name, index in re.findall(r"\.([A-Za-z_0-9]+)|\[(\d+)\]", path[1:]):
        node = node[name] if name else node[int(index)]
    return node


def check_numbers(page: str, records: list[dict[str, Any]]) -> list[str]:
    """Every number carrying a data-path holds the record's exact value there (``1 - x`` where marked)."""
    numbers = parsed(page).numbers
    for number in numbers:
        record = records[int(number.get("data-card", "0"))]
        expected = resolve(record, number["data-path"])
        if number.get("data-transform") == "one-minus":
            expected = 1.0 - expected
        assert json.loads(number["data-value"]) == expected, number
    return [n["data-path"] for n in numbers]


@pytest.fixture(scope="module")
def records() -> dict[str, dict[str, Any]]:
    formats_1 = {"cartpole": cartpole(), "subset": subset(), "corruptions": corruptions(), "unrated": unrated()}
    formats_2 = {f"{name}-v2": graded(formats_1[name]) for name in ("cartpole", "subset", "corruptions")}
    return {**formats_1, **formats_2}


# ---------------------------------------------------------------------------------------------- the schema


@pytest.mark.parametrize("version", [1, 2])
def test_the_schema_is_valid_draft_2020_12(version: int) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = robustness_card_schema(version)
    assert schema["properties"]["format_version"] == {"const": version}
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["additionalProperties"] is False
    for name in ("level", "family", "sub_family", "reproducibility"):
        assert schema["$defs"][name]["additionalProperties"] is False
    assert schema["$defs"]["sub_family"]["properties"]["sub_families"] == {"type": "null"}
    assert "sub_families" not in schema["$defs"]["sub_family"]["required"]


def test_the_hand_built_records_are_valid(records: dict[str, dict[str, Any]]) -> None:
    for record in records.values():
        validate_robustness_card(record)
    assert records["cartpole"]["overall"]["stars"] in range(1, 6)
    assert records["subset"]["overall"]["stars"] is None


def _broken(record: dict[str, Any], path: list[Any], value: Any = None, *, delete: bool = False) -> dict[str, Any]:
    out = copy.deepcopy(record)
    node = out
    for part in path[:-1]:
        node = node[part]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


@pytest.mark.parametrize(
    ("path", "value", "delete", "says"),
    [
        (["env_id"], None, True, r"\$\.env_id is missing"),
        (["families", 1, "levels", 2, "flip_rate"], None, True, r"\$\.families\[1\]\.levels\[2\]\.flip_rate \(family "),
        (["settings", "episodes"], "20", False, r"\$\.settings\.episodes holds '20', which is not of type 'integer'"),
        (["families", 0, "stars"], 6, False, r"\$\.families\[0\]\.stars \(family 'obs_noise'\) holds 6, which is "),
        (["overall", "stars"], 0, False, r"\$\.overall\.stars holds 0, which is less than the minimum of 1"),
        (
            ["families", 2, "levels", 3, "impact"],
            math.nan,
            False,
            r"\$\.families\[2\]\.levels\[3\]\.impact .*holds nan",
        ),
        (["clean", "ci", 1], math.inf, False, r"\$\.clean\.ci\[1\] holds inf: JSON has no NaN"),
        (["agent", "colour"], "blue", False, r"\$\.agent\.colour is not a field of a robustness card"),
        (["format_version"], 2, False, r"\$\.rated is not a field of a robustness card \(format version 2\)"),
        (["format_version"], 3, False, r"\$\.format_version holds 3, not a card format version: \[1, 2\]"),
        (["settings", "mode"], "slow", False, r"\$\.settings\.mode holds 'slow', which is not one of"),
        (["families", 0, "levels", 0, "level"], True, False, r"\$\.families\[0\]\.levels\[0\]\.level .*holds True"),
        (
            ["families", 1, "name"],
            "obs_noise",
            False,
            r"\$\.families\[1\]\.name .*names the family at \$\.families\[0\]",
        ),
        (["families", 0, "levels", 1, "level"], 1, False, r"\$\.families\[0\]\.levels\[1\]\.level .*given twice"),
    ],
)
def test_a_bad_record_names_the_path_and_what_it_holds(
    records: dict[str, dict[str, Any]], path: list[Any], value: Any, delete: bool, says: str
) -> None:
    bad = _broken(records["cartpole"], path, value, delete=delete)
    with pytest.raises(InvalidArgument, match=says):
        validate_robustness_card(bad)


def test_a_sub_family_with_sub_families_and_a_rating_of_an_incomplete_card_are_refused(
    records: dict[str, dict[str, Any]],
) -> None:
    # A sub-family may say it has none (null), but holds no sub-families of its own.
    validate_robustness_card(_broken(records["corruptions"], ["families", 0, "sub_families", 2, "sub_families"], None))
    nested = [copy.deepcopy(records["corruptions"]["families"][0]["sub_families"][0])]
    bad = _broken(records["corruptions"], ["families", 0, "sub_families", 2, "sub_families"], nested)
    with pytest.raises(
        InvalidArgument,
        match=r"sub_families\[2\]\.sub_families \(family 'corruptions', sub-family 'motion_blur'\) holds \[\{",
    ):
        validate_robustness_card(bad)
    bad = _broken(records["subset"], ["overall", "stars"], 3)
    with pytest.raises(InvalidArgument, match=r"\$\.overall\.stars holds 3, but \$\.settings\.complete is false"):
        validate_robustness_card(bad)
    with pytest.raises(InvalidType, match="`record` must be"):
        validate_robustness_card([records["subset"]])


# ---------------------------------------------------------------------------------------------- the files


def test_write_and_read_round_trip_exactly(records: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    record = records["corruptions"]
    out = write_robustness_card(record, tmp_path / "card")
    assert out == tmp_path / "card"
    assert sorted(p.name for p in out.iterdir()) == ["badge.svg", "card.html", "card.json"]
    text = (out / "card.json").read_text()
    assert text == json.dumps(record, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert read_robustness_card(out) == record
    assert read_robustness_card(out / "card.json") == record
    # Writing the same record again gives the same files (timings are part of the record here).
    pages = {p.name: p.read_bytes() for p in out.iterdir()}
    write_robustness_card(record, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == pages


def test_write_refuses_a_bad_record_and_writes_nothing(records: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    bad = _broken(records["cartpole"], ["random_return"], math.nan)
    with pytest.raises(InvalidArgument, match=r"\$\.random_return holds nan"):
        write_robustness_card(bad, tmp_path / "card")
    assert not (tmp_path / "card").exists()


def test_reading_a_missing_or_damaged_card_names_the_file(records: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    with pytest.raises(MissingFile, match=r"no robustness card at .*card\.json"):
        read_robustness_card(tmp_path)
    out = write_robustness_card(records["subset"], tmp_path / "card")
    path = out / "card.json"
    path.write_text(path.read_text()[:-40])
    with pytest.raises(InvalidArgument, match=r"card\.json' is not a robustness card: not JSON"):
        read_robustness_card(out)
    path.write_text(json.dumps({**records["subset"], "rated": "yes"}))
    with pytest.raises(InvalidArgument, match=r"card\.json' is damaged: .*\$\.rated holds 'yes'"):
        read_robustness_card(path)


# ---------------------------------------------------------------------------------------------- the page


@pytest.mark.parametrize("name", ["cartpole", "subset", "corruptions", "unrated", "cartpole-v2", "corruptions-v2"])
def test_the_page_is_self_contained_and_traces_every_number(records: dict[str, dict[str, Any]], name: str) -> None:
    record = records[name]
    page = robustness_card_html(record)
    assert_self_contained(page)
    paths = set(check_numbers(page, [record]))
    key = "skill" if name.endswith("-v2") else "normalized"
    levels = {
        f"$.families[{i}].levels[{j}].{key}"
        for i, f in enumerate(record["families"])
        for j, x in enumerate(f["levels"])
        if x[key] is not None
    }
    assert levels <= paths
    area = "score" if name.endswith("-v2") else "ausc"
    subs = {
        f"$.families[{i}].sub_families[{k}].{area}"
        for i, f in enumerate(record["families"])
        for k, _ in enumerate(f["sub_families"] or ())
    }
    assert subs <= paths


def test_the_page_shows_the_rating_or_why_there_is_none(records: dict[str, dict[str, Any]]) -> None:
    stars = records["cartpole"]["overall"]["stars"]
    page = robustness_card_html(records["cartpole"])
    assert f'data-stars="{stars}"' in page and f'<span id="rating-text">{stars}/5</span>' in page
    assert "\u2605" * stars + "\u2606" * (5 - stars) in page
    page = robustness_card_html(records["subset"])
    assert '<span id="rating-text">not rated</span>' in page
    assert "not every family of ladder card-v1 was run (run: obs_noise, attack)" in page
    page = robustness_card_html(records["unrated"])
    assert "the clean mean return (9.5) is not above the random policy&#x27;s (22.4)" in page
    assert "Recovery after a shift that ends mid-episode was not measured" in page


def test_the_page_escapes_the_record_and_marks_interventions(records: dict[str, dict[str, Any]]) -> None:
    page = robustness_card_html(records["corruptions"])
    assert "<b>ppo</b> &" not in page and "&lt;b&gt;ppo&lt;/b&gt; &amp; &quot;Pong&quot;" in page
    page = robustness_card_html(records["cartpole"])
    assert "Interventions (shown, not rated)" in page and 'data-intervention="heavy_pole"' in page
    assert "The pole weighs 10 times more from step 100." in page
    assert 'data-path="$.interventions[0].impact_ci[1]"' in page  # its interval, as a number of the record
    assert "None were made" in robustness_card_html(records["subset"])
    # A URL in the record is shown as text, never as a link or a resource.
    assert "https://huggingface.co/sb3/ppo-CartPole-v1" in page
    assert_self_contained(page)


def test_frames_become_an_embedded_animation(records: dict[str, dict[str, Any]]) -> None:
    page = robustness_card_html(
        records["corruptions"], {"clean": frames(9), "worst": frames(5, seed=1), "worst_label": "fog, level 5"}
    )
    match = re.search(r'<img id="episodes" [^>]*src="data:image/gif;base64,([A-Za-z0-9+/=]+)"', page)
    assert match is not None
    assert "Right: the worst shifted episode, fog, level 5 (5 steps)" in page
    with pytest.raises(InvalidArgument, match=r"`frames\['worst'\]\[1\]` must be an HxWx3 uint8 image"):
        robustness_card_html(
            records["subset"], {"clean": frames(2), "worst": [frames(1)[0], frames(1)[0][..., 0]], "worst_label": "x"}
        )
    with pytest.raises(InvalidArgument, match="`frames` must hold 'clean'"):
        robustness_card_html(records["subset"], {"worst": frames(2), "worst_label": "x"})
    with pytest.raises(InvalidType, match=r"`frames\['worst_label'\]` must be a string"):
        robustness_card_html(records["subset"], {"clean": frames(2), "worst": frames(2)})


# ---------------------------------------------------------------------------------------------- the badge


def test_the_badge_is_xml_and_says_the_rating(records: dict[str, dict[str, Any]]) -> None:
    stars = records["cartpole"]["overall"]["stars"]
    for name, words in (("cartpole", f"{stars}/5"), ("subset", "not rated")):
        svg = robustness_badge_svg(records[name])
        root = ET.fromstring(svg)
        assert root.tag == f"{SVG}svg"
        assert root.get("aria-label") == f"robustness: {words}"
        texts = [t.text for t in root.iter(f"{SVG}text")]
        assert "robustness" in texts and words in texts
        assert "href" not in svg.replace('href="#', "") and "url(#" in svg
        assert "http" not in svg.replace("http://www.w3.org/2000/svg", "")
    colours = {
        robustness_badge_svg(variant(records["cartpole"], "x", stars=s)).split('fill="')[3].split('"')[0]
        for s in range(1, 6)
    }
    assert len(colours) == 5


# ---------------------------------------------------------------------------------------------- the leaderboard


def _league(records: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    best = records["cartpole"]
    return [
        records["subset"],
        variant(best, "a2c-CartPole-v1", stars=best["overall"]["stars"] - 1, mean_ausc=0.99),
        best,
        variant(best, "tie-CartPole-v1"),
        records["unrated"],
        variant(best, "sac-CartPole-v1", mean_ausc=best["overall"]["mean_ausc"] + 0.001),
    ]


def test_the_leaderboard_ranks_by_stars_then_mean_ausc_unrated_last(records: dict[str, dict[str, Any]]) -> None:
    league = _league(records)
    page = robustness_leaderboard_html(league)
    assert_self_contained(page)
    rows = re.findall(r'<tr data-card="(\d+)" data-rank="(\d*)">', page)
    assert rows == [("5", "1"), ("2", "2"), ("3", "2"), ("1", "4"), ("0", ""), ("4", "")]
    assert page.count('<img class="badge"') == len(league)
    assert 'data-family="dynamics">not run</td>' in page  # the subset card ran no dynamics
    assert 'id="settings-differ"' in page  # the subset card ran in fast mode
    paths = check_numbers(page, league)
    assert paths.count("$.overall.mean_ausc") == 4  # the two unrated cards have no mean AUSC


def test_the_leaderboard_refuses_mixed_envs_ladders_and_nothing(
    records: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    with pytest.raises(
        InvalidArgument, match=r"one env: records\[0\] has env_id 'CartPole-v1' but records\[1\] has 'ALE/Pong-v5'"
    ):
        robustness_leaderboard_html([records["cartpole"], records["corruptions"]])
    other = copy.deepcopy(records["subset"])
    other["ladder"] = "card-v2"
    with pytest.raises(
        InvalidArgument,
        match="one ladder version: records\\[0\\] has ladder 'card-v1' but records\\[1\\] has 'card-v2'",
    ):
        robustness_leaderboard_html([records["cartpole"], other])
    with pytest.raises(InvalidArgument, match="at least one"):
        robustness_leaderboard_html([])
    with pytest.raises(InvalidArgument, match="at least one"):
        write_robustness_leaderboard([], tmp_path)
    with pytest.raises(InvalidArgument, match=r"`records\[1\]`: `record` is not a valid robustness card: \$\.rated"):
        robustness_leaderboard_html([records["cartpole"], {**records["cartpole"], "rated": 1}])
    a = write_robustness_card(records["cartpole"], tmp_path / "a")
    b = write_robustness_card(records["corruptions"], tmp_path / "b")
    with pytest.raises(
        InvalidArgument, match=r"`card_dirs` .*'.*/a' has env_id 'CartPole-v1' but '.*/b' has 'ALE/Pong-v5'"
    ):
        write_robustness_leaderboard([a, b], tmp_path / "board")


def test_write_leaderboard_reads_the_card_folders(records: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    dirs = [write_robustness_card(r, tmp_path / str(i)) for i, r in enumerate(_league(records))]
    page = write_robustness_leaderboard(dirs, tmp_path / "board")
    assert page == tmp_path / "board" / "leaderboard.html"
    assert page.read_text() == robustness_leaderboard_html(_league(records))
    assert [p.name for p in page.parent.iterdir()] == ["leaderboard.html"]


def test_a_margin_too_thin_for_intervals_is_said_under_the_rating(records: dict[str, dict[str, Any]]) -> None:
    assert 'id="thin-margin"' not in robustness_card_html(records["cartpole"])
    thin = copy.deepcopy(records["cartpole"])
    thin["families"][0]["ausc_ci"] = None
    for level in thin["families"][0]["levels"]:
        level["impact_ci"] = None
    validate_robustness_card(thin)
    assert 'id="thin-margin"' in robustness_card_html(thin)


# ---------------------------------------------------------------------------------------------- format 2


def test_a_format_2_page_rates_skill_says_how_sure_and_shows_the_relative_numbers_apart(
    records: dict[str, dict[str, Any]],
) -> None:
    record = records["cartpole-v2"]
    page = robustness_card_html(record)
    stars = record["overall"]["stars"]
    assert f'<span id="rating-text">{stars}/5</span>' in page
    assert 'id="stars-probability"' in page
    paths = set(check_numbers(page, [record]))
    assert {f"$.overall.stars_probability[{k}]" for k in range(5)} <= paths
    assert {"$.overall.score", "$.overall.score_ci[0]", "$.clean.skill", "$.reference_return"} <= paths
    assert {"$.families[0].relative.ausc", "$.families[0].relative.tolerated", "$.families[0].score"} <= paths
    assert "$.overall.relative.mean_ausc" in paths
    assert "rate nothing" in page and "the env&#x27;s maximum return" in page  # the reference's source
    subset_page = robustness_card_html(records["subset-v2"])
    assert '<span id="rating-text">not rated</span>' in subset_page and 'id="stars-probability"' not in subset_page
    assert "not every family of ladder card-v2 was run" in subset_page


def test_a_format_2_leaderboard_ranks_by_stars_score_and_clean_skill(records: dict[str, dict[str, Any]]) -> None:
    best = records["cartpole-v2"]
    worse = copy.deepcopy(best)
    worse["agent"]["name"] = "worse"
    worse["overall"]["score"] -= 0.01
    weaker = copy.deepcopy(best)
    weaker["agent"]["name"] = "weaker"
    weaker["clean"]["skill"] -= 0.2
    fewer = variant(best, "fewer", stars=best["overall"]["stars"] - 1, score=0.99)
    league = [records["subset-v2"], weaker, fewer, worse, best, variant(best, "tie")]
    page = robustness_leaderboard_html(league)
    rows = re.findall(r'<tr data-card="(\d+)" data-rank="(\d*)">', page)
    assert rows == [("4", "1"), ("5", "1"), ("1", "3"), ("3", "4"), ("2", "5"), ("0", "")]
    paths = check_numbers(page, league)
    assert paths.count("$.overall.score") == 6 and paths.count("$.overall.relative.mean_ausc") == 5  # subset: none
    assert "ranks nothing" in page
    with pytest.raises(InvalidArgument, match="one ladder version: records\\[0\\] has ladder 'card-v1'"):
        robustness_leaderboard_html([records["cartpole"], best])
