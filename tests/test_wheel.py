"""The wheel built from the source tree holds the whole package, installs on its own and works.

The wheel is built from a copy of the working tree's files (those git tracks or would track), so the build
leaves nothing in the checkout. It goes into a fresh virtual environment that sees the project environment's
site-packages for its dependencies, but not its editable install of rlwrappers: that one is put on the path by
a ``.pth`` file, which Python reads only in a site directory, and the project's site-packages is added as a
plain path. Every module of the installed package must import from the new environment, and the console script
must run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

#: Run in the fresh environment: imports every module of the installed package and says what it found.
IMPORT_ALL = """
import importlib, json, pkgutil, sys
from pathlib import Path

import rlwrappers

root = Path(rlwrappers.__file__).parent
walked = sorted(m.name for m in pkgutil.walk_packages(rlwrappers.__path__, "rlwrappers."))
on_disk = sorted(
    ".".join(("rlwrappers", *p.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
    for p in root.rglob("*.py")
)
failed = {}
for name in sorted(set(walked) | set(on_disk)):
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = repr(exc)
old = {}
for name in ("rlwrappers.interventions:Intervene", "rlwrappers.evaluation:LivesAsEpisodes"):
    module, attr = name.split(":")
    old[name] = getattr(importlib.import_module(module), attr).__module__
loaded = {
    name: getattr(module, "__file__", None) for name, module in sys.modules.items() if name.startswith("rlwrappers")
}
print("RESULT " + json.dumps(
    {"file": rlwrappers.__file__, "walked": walked, "on_disk": on_disk, "failed": failed, "old": old, "loaded": loaded}
))
"""


@dataclass(frozen=True)
class Installed:
    source: Path  # the copy of the working tree the wheel was built from
    wheel: Path
    venv: Path
    site: Path  # the fresh environment's site-packages
    env: dict[str, str]  # the environment variables its processes run with
    cwd: Path  # an empty folder they run in: a checkout in the working directory would shadow the wheel


def copy_working_tree(dest: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        path = ROOT / name
        if path.is_file():  # tracked files deleted in the working tree are not part of it
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest / name)


def run(args: list[str | os.PathLike[str]], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to know the files of the working tree")
    tmp = tmp_path_factory.mktemp("wheel")
    source, dist, venv, cwd = tmp / "source", tmp / "dist", tmp / "venv", tmp / "cwd"
    cwd.mkdir()
    copy_working_tree(source)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_")) and k != "VIRTUAL_ENV"}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    offline = ["--no-deps", "--no-index", "--no-cache-dir", "--quiet"]
    pip = [sys.executable, "-m", "pip"]
    run([*pip, "wheel", *offline, "--no-build-isolation", "--wheel-dir", dist, source], env, cwd)
    (wheel,) = dist.glob("rlwrappers-*.whl")

    run([sys.executable, "-m", "venv", "--without-pip", venv], env, cwd)
    python = venv / "bin" / "python"
    run([*pip, "--python", python, "install", *offline, wheel], env, cwd)
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env, cwd).strip())
    # The dependencies: the project environment's site-packages as a plain path, whose .pth files (among them
    # the editable install's finder) are not read.
    project_site = sysconfig.get_paths()["purelib"]
    (site / "project_dependencies.pth").write_text(project_site + "\n")
    return Installed(source, wheel, venv, site, env, cwd)


def test_wheel_holds_every_file_of_the_package(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = {n for n in wheel.namelist() if not n.split("/")[0].endswith(".dist-info")}
    source = installed.source
    expected = {str(p.relative_to(source)) for p in (source / "rlwrappers").rglob("*") if p.is_file()}
    # The top-level envs/ folder is the package rlwrappers.envs.
    envs = source / "envs"
    expected |= {f"rlwrappers/envs/{p.relative_to(envs)}" for p in envs.rglob("*") if p.is_file()}
    assert sorted(names - expected) == []
    assert sorted(expected - names) == [], "files of the package left out of the wheel"
    assert {"rlwrappers/py.typed", "rlwrappers/envs/__init__.py"} <= names
    assert any(n.startswith("rlwrappers/zoo/agents/") and n.endswith(".pt") for n in names)


def test_every_module_imports_from_the_wheel(installed: Installed) -> None:
    out = run([installed.venv / "bin" / "python", "-c", IMPORT_ALL], installed.env, installed.cwd)
    (line,) = [line for line in out.splitlines() if line.startswith("RESULT ")]
    result = json.loads(line.removeprefix("RESULT "))
    assert Path(result["file"]).is_relative_to(installed.venv)
    assert Path(result["file"]) == installed.site / "rlwrappers" / "__init__.py"
    outside = {
        n: f for n, f in result["loaded"].items() if f is not None and not Path(f).is_relative_to(installed.venv)
    }
    assert outside == {}, "modules of rlwrappers imported from outside the fresh environment"
    assert result["failed"] == {}
    assert len(result["on_disk"]) > 50
    assert {"rlwrappers.envs", "rlwrappers.studies.run", "rlwrappers.logs.reader"} <= set(result["on_disk"])
    # pkgutil (and the tools built on it) finds a package only by its __init__.py.
    assert sorted(set(result["on_disk"]) - {"rlwrappers"} - set(result["walked"])) == [], (
        "modules pkgutil.walk_packages does not find: a folder of the package lacks its __init__.py"
    )
    assert result["old"] == {
        "rlwrappers.interventions:Intervene": "rlwrappers.wrappers.state",
        "rlwrappers.evaluation:LivesAsEpisodes": "rlwrappers.wrappers.atari",
    }


def test_console_script_lists_the_catalogue(installed: Installed) -> None:
    script = installed.venv / "bin" / "rlwrappers"
    assert script.read_text().splitlines()[0] == f"#!{installed.venv / 'bin' / 'python'}"
    out = run([script, "list"], installed.env, installed.cwd)
    assert "rlwrappers/CartPole-ObsNoise-v1" in out
    assert "obs_noise(std=0.05)" in out
