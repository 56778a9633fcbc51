"""The documentation runs: every ```python block of README.md and docs/*.md, the examples, the CLI commands."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from rlwrappers.envs.toybox import interventions as catalogues

import rlwrappers as rw
from rlwrappers import core
from rlwrappers.logs import Log

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
# Modules that come with extras; a page whose example needs a missing one is skipped, not failed.
OPTIONAL = {
    "stable_baselines3",
    "torch",
    "rl_zoo3",
    "mujoco",
    "ale_py",
    "cv2",
    "lpips",
    "skimage",
    "torchattacks",
    "pettingzoo",
    "mpe2",
    "statsmodels",
    "scipy",
    "ctoybox",
}


def blocks(page: Path, language: str) -> list[tuple[int, str]]:
    """The fenced blocks of ``language`` in ``page``, each with the line number of its first code line."""
    text = page.read_text()
    out = []
    for match in FENCE.finditer(text):
        if match.group(1) == language:
            out.append((text.count("\n", 0, match.start(2)) + 1, match.group(2)))
    return out


@pytest.fixture(autouse=True)
def _isolated_registries() -> Iterator[None]:
    """Pages register env IDs and perturbations; other tests in this process must not see them."""
    with contextlib.suppress(ImportError):  # ALE registers its IDs once, on import: keep them for every page
        importlib.import_module("ale_py")
    env_ids = set(gym.registry)
    perturbations, wrappers = dict(core._REGISTRY), dict(core._WRAPPERS)
    defined = {game: dict(entries) for game, entries in catalogues._DEFINED.items()}
    yield
    catalogues._DEFINED.clear()
    catalogues._DEFINED.update(defined)
    for env_id in set(gym.registry) - env_ids:
        del gym.registry[env_id]
    core._REGISTRY.clear()
    core._REGISTRY.update(perturbations)
    core._WRAPPERS.clear()
    core._WRAPPERS.update(wrappers)


def run_page(page: Path) -> dict[str, object]:
    """Executes the page's python blocks in order, in one namespace; tracebacks point at the page's lines."""
    namespace: dict[str, object] = {"__name__": f"docs.{page.stem}"}
    for line, code in blocks(page, "python"):
        source = "\n" * (line - 1) + code
        try:
            exec(compile(source, str(page.relative_to(ROOT)), "exec", dont_inherit=True), namespace)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.split(".")[0] in OPTIONAL:
                pytest.skip(f"{page.name}:{line} needs {exc.name}")
            raise
        except rw.error.MissingExtra as exc:  # an extra the page needs is not installed
            pytest.skip(f"{page.name}:{line}: {exc}")
    return namespace


def test_the_docs_exist_and_hold_examples() -> None:
    names = {page.name for page in PAGES}
    expected = {"README.md", "index.md", "perturbations.md", "schedules.md", "seeding.md", "specs.md"}
    expected |= {"registration.md", "logs.md", "integrations.md", "testing.md", "errors.md", "cli.md"}
    assert expected | {"decisions.md"} <= names
    for page in PAGES:
        if page.name in expected:
            assert blocks(page, "python") or blocks(page, "bash"), f"{page.name} has no example"


def test_fences_are_not_indented() -> None:
    # An indented fence would be rendered as a block but skipped by the extraction above.
    for page in PAGES:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            assert not re.match(r"\s+```", line), f"{page.name}:{number}: indented fence"


def test_readme_opens_with_the_two_commands() -> None:
    first = FENCE.search((ROOT / "README.md").read_text())
    assert first is not None and first.group(1) == "bash"
    commands = [line.split("#")[0].strip() for line in first.group(2).splitlines()]
    assert commands == ["bash scripts/demo.sh", "bash scripts/test.sh"]


# Pages whose examples import heavy extras (torch) take several seconds.
SLOW_PAGES = {"integrations.md", "agents.md"}


@pytest.mark.parametrize(
    "page",
    [pytest.param(page, marks=pytest.mark.slow) if page.name in SLOW_PAGES else page for page in PAGES],
    ids=[page.name for page in PAGES],
)
def test_python_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_page(page)


def test_readme_claims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace = run_page(ROOT / "README.md")
    assert re.fullmatch(r"rlwrappers/CartPole-obs_noise_std_0\.2-[0-9a-f]{8}-v1", str(namespace["env_id"]))
    log = namespace["log"]
    assert isinstance(log, Log)
    assert list(log.episodes["seed"]) == [0, 1, 2]
    assert len(rw.catalogue()) == 70


def cli_commands(page: Path) -> list[list[str]]:
    """The arguments of each ``rlwrappers`` command in a page's bash blocks, in order."""
    commands = []
    for _, code in blocks(page, "bash"):
        for line in code.replace("\\\n", " ").splitlines():  # join continued lines
            words = shlex.split(line, comments=True)
            if words[:1] == ["rlwrappers"]:
                commands.append(words[1:])
    return commands


CLI_PAGES = [page for page in PAGES if cli_commands(page)]


def test_the_docs_cli_commands_are_found() -> None:
    assert ["list"] in cli_commands(ROOT / "docs" / "cli.md")
    assert {page.name for page in CLI_PAGES} >= {"README.md", "cli.md", "card.md"}


@pytest.mark.slow
@pytest.mark.parametrize("page", CLI_PAGES, ids=[page.name for page in CLI_PAGES])
def test_cli_commands_in_the_docs_run(page: Path, tmp_path: Path) -> None:
    """Each page's commands, in order, in a folder of its own (a page's later commands read its earlier ones')."""
    for args in cli_commands(page):
        done = subprocess.run(
            [sys.executable, "-m", "rlwrappers.cli", *args], capture_output=True, text=True, cwd=tmp_path, timeout=300
        )
        assert done.returncode == 0, (args, done.stderr)
        assert done.stdout.strip(), args


def run_example(script: str, *args: str, tmp_path: Path) -> str:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_quickstart_runs_and_prints_the_summary(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    text = run_example("quickstart.py", "--episodes", "3", "--out", str(out), tmp_path=tmp_path)
    for heading in ("clean return", "perturbed return", "obs_noise steps", "sticky_action steps", "stuck steps"):
        assert heading in text
    assert "mean return: clean" in text
    clean, perturbed = rw.read_log(out / "clean"), rw.read_log(out / "perturbed")
    assert list(clean.episodes["seed"]) == list(perturbed.episodes["seed"]) == [0, 1, 2]
    assert [p["label"] for p in perturbed.meta["perturbations"]] == ["obs_noise", "sticky_action", "dynamics_shift"]
    assert clean.meta["perturbations"] == []
    # Observation noise starts at episode 2 (counted from 0): the first two episodes report none.
    noisy = perturbed.steps.groupby("episode")["obs_noise.active"].sum()
    assert noisy.iloc[0] == noisy.iloc[1] == 0 and noisy.iloc[2] > 0
    # A second run with the same seeds prints the same table (only the timing differs).
    again = run_example("quickstart.py", "--episodes", "3", "--out", str(tmp_path / "again"), tmp_path=tmp_path)
    assert text.splitlines()[:-1] == again.splitlines()[:-1]


def test_quickstart_rejects_a_bad_budget(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py"), "--episodes", "0"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 2 and "--episodes" in done.stderr


QUIET = ("--quiet", "--no-report", "--probe", "0")


@pytest.mark.slow
def test_cleanrl_example_trains_and_evaluates(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "ppo"
    args = ["--total-timesteps", "256", "--num-envs", "2", "--num-steps", "64", "--update-epochs", "1"]
    text = run_example("cleanrl_ppo_cartpole.py", *args, "--eval-episodes", "2", "--out", str(out), tmp_path=tmp_path)
    assert "iteration 2/2" in text and "clean return" in text and "perturbed return" in text
    clean, perturbed = rw.read_log(out / "eval-clean" / "env0"), rw.read_log(out / "eval-perturbed" / "env0")
    assert list(clean.episodes["seed"]) == list(perturbed.episodes["seed"]) == [1001, 1002]
    assert [p["name"] for p in perturbed.meta["perturbations"]] == ["obs_noise", "sticky_action"]
    randomized = ["--perturbations", "dynamics_shift(values={'length': uniform(0.25, 1.0)})", "--out", str(out / "dr")]
    run_example("cleanrl_ppo_cartpole.py", *args, "--eval-episodes", "2", *randomized, tmp_path=tmp_path)
    drawn = rw.read_log(out / "dr" / "eval-perturbed" / "env0").episodes["dynamics_shift.values.length"]
    assert drawn.between(0.25, 1.0).all() and drawn.nunique() == 2  # one length per episode, in the log
    # the network it saved, as CleanRL saves it, plays from the command line through its make_agent
    model = out / "agent.cleanrl_model"
    assert f"network: {model}" in text
    agent = f"{ROOT / 'examples' / 'cleanrl_ppo_cartpole.py'}:make_agent"
    command = ["evaluate", "--env", "CartPole-v1", "--agent", agent, "--shift", "obs_noise(std=0.1)", "--episodes", "2"]
    done = subprocess.run(
        [sys.executable, "-m", "rlwrappers.cli", *command, "--seeds", "2", "--out", str(tmp_path / "cli"), *QUIET],
        capture_output=True,
        text=True,
        env={**os.environ, "CLEANRL_MODEL": str(model)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "runs the Python code in it" in done.stderr  # the trust warning
    index = json.loads((tmp_path / "cli" / "index.json").read_text())["runs"]
    assert {row["status"] for row in index} == {"complete"} and len(index) == 4
    missing = subprocess.run(
        [sys.executable, "-m", "rlwrappers.cli", *command, "--out", str(tmp_path / "none"), "--quiet", "--no-report"],
        capture_output=True,
        text=True,
        env={**os.environ, "CLEANRL_MODEL": str(tmp_path / "nowhere.cleanrl_model")},
        timeout=120,
    )
    assert missing.returncode != 0 and "nowhere.cleanrl_model" in missing.stderr


def test_cli_sample_output_is_current() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rlwrappers.cli", "list"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    output = done.stdout.splitlines()
    samples = blocks(ROOT / "docs" / "cli.md", "text")
    assert samples
    for _, sample in samples:
        for line in sample.splitlines():
            if line.strip() != "...":
                assert line in output, f"docs/cli.md shows a line that `rlwrappers list` no longer prints: {line!r}"


def test_ids_quoted_in_the_docs_are_current() -> None:
    env_id = rw.register("CartPole-v1", "obs_noise(std=0.2)")
    quoted = [
        match
        for page in PAGES
        for match in re.findall(r"rlwrappers/CartPole-obs_noise_std_0\.2-[0-9a-f]{8}-v1", page.read_text())
    ]
    assert len(quoted) >= 3
    assert set(quoted) == {env_id}
