"""scripts/check_architecture.py: the package passes; small packages with cycles, breaches or private reaches fail."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("grimp")

ROOT = Path(__file__).resolve().parent.parent


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_architecture", ROOT / "scripts" / "check_architecture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


arch = load_script()


def package(folder: Path, files: dict[str, str], root: str = "pkg") -> dict[str, Path]:
    """Writes ``files`` (path in the package -> source) under ``folder``; the sources of package ``root``."""
    for name, source in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
    return {root: folder}


def private_uses(sources: dict[str, Path], homes: tuple[str, ...] = ()) -> list[str]:
    return arch.find_private_uses(arch.Package(sources), homes=homes, exceptions={})


def test_the_package_passes() -> None:
    assert arch.check() == {}
    assert arch.main() == 0


def test_cycles_are_found_through_functions_and_relative_imports_but_not_type_checking(tmp_path: Path) -> None:
    sources = package(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "a.py": "from pkg import b\n",
            "b.py": "def f():\n    from .c import x\n",
            "c.py": "from .a import y\nx = 1\n",
            "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import e\n",
            "e.py": "import pkg.d\n",
        },
    )
    assert arch.check(sources) == {
        "import cycles": [
            "pkg.a -> pkg.b (line 1 of pkg.a) -> pkg.c (line 2 of pkg.b) -> pkg.a (line 1 of pkg.c)",
        ]
    }


def test_the_wall_is_breached_through_other_modules_and_a_second_folder(tmp_path: Path) -> None:
    sources = package(tmp_path / "pkg", {"__init__.py": "", "helpers.py": "import pkg.metrics.core\n"})
    package(tmp_path / "pkg" / "metrics", {"core.py": "x = 1\n"})  # a namespace package: no __init__.py
    sources |= package(tmp_path / "envs", {"__init__.py": "", "game.py": "from pkg import helpers\n"}, "pkg.envs")
    graph = arch.build_graph(arch.Package(sources))
    assert arch.find_wall_breaches(graph, "pkg.envs", ["pkg.metrics"]) == [
        "pkg.envs.game -> pkg.helpers (line 1 of pkg.envs.game) -> pkg.metrics.core (line 1 of pkg.helpers)"
    ]
    assert arch.find_wall_breaches(graph, "pkg.helpers", ["pkg.envs"]) == []


def test_private_names_of_other_modules_are_found(tmp_path: Path) -> None:
    sources = package(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "_private_module.py": "",
            "a.py": "__version__ = '1'\n_helper = 1\n",
            "b.py": """\
                import pkg.a
                from pkg import _private_module, a
                from pkg.a import __version__, _helper
                from pkg._private_module import x

                y = a._helper + pkg.a._helper + getattr(a, "_helper")
            """,
        },
    )
    assert private_uses(sources) == [
        f"{tmp_path}/pkg/b.py:3: imports the private name _helper of pkg.a",
        f"{tmp_path}/pkg/b.py:6: uses the private name _helper of pkg.a",
        f"{tmp_path}/pkg/b.py:6: uses the private name _helper of pkg.a",
        f"{tmp_path}/pkg/b.py:6: uses the private name _helper of pkg.a",
    ]


def test_private_attributes_of_other_objects_are_found_unless_the_module_defines_them(tmp_path: Path) -> None:
    sources = package(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "agent.py": """\
                import collections

                class Agent:
                    _cache = None

                    def __init__(self):
                        self._steps = 0

                    def __eq__(self, other):
                        return self._steps == other._steps and super()._hidden() and self._cache is other._cache

                    @classmethod
                    def make(cls):
                        return cls._factory()

                def reach(agent):
                    pair = collections.namedtuple("Pair", "a b")(1, 2)._replace(a=3)
                    return agent._forward(pair), setattr(agent, "_weights", None)
            """,
        },
    )
    problems = private_uses(sources)
    assert [problem.split(": ", 1)[1].split(" (")[0] for problem in problems] == [
        "uses the private _forward of agent, which this module does not define",
        "uses the private _weights of agent, which this module does not define",
    ]
    assert all(problem.startswith(f"{tmp_path}/pkg/agent.py:18: ") for problem in problems)


def test_third_party_private_names_need_a_home_and_a_comment(tmp_path: Path) -> None:
    reads = """\
        import numpy as np
        from gymnasium.envs.classic_control import pendulum

        def observe(env):
            return env.unwrapped._get_obs()

        def observe_commented(env):
            # Pendulum computes its observation only in its private `_get_obs`.
            return env.unwrapped._get_obs()

        def imported():
            from ctoybox.ffi import _handle  # private in ctoybox: its only decoder of errors
            return np._NoValue, pendulum._private  # private in numpy and Gymnasium
    """
    sources = package(
        tmp_path / "pkg", {"__init__.py": "", "state/__init__.py": "", "state/sim.py": reads, "x.py": reads}
    )
    problems = private_uses(sources, homes=("pkg.state",))
    assert [problem.split(" (")[0] for problem in problems] == [
        f"{tmp_path}/pkg/state/sim.py:5: uses the private _get_obs of env.unwrapped, which this module does not define",
        f"{tmp_path}/pkg/x.py:5: uses the private _get_obs of env.unwrapped, which this module does not define",
        f"{tmp_path}/pkg/x.py:9: uses the private _get_obs of env.unwrapped, which this module does not define",
        f"{tmp_path}/pkg/x.py:12: imports the private ctoybox.ffi._handle",
        f"{tmp_path}/pkg/x.py:13: uses the private numpy._NoValue",
        f"{tmp_path}/pkg/x.py:13: uses the private gymnasium.envs.classic_control.pendulum._private",
    ]
    excepted = arch.find_private_uses(arch.Package(sources), homes=("pkg.state",), exceptions={"pkg.x": {"_get_obs"}})
    assert len(excepted) == len(problems) - 1  # only the commented line, and only that name
