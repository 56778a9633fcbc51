"""Entry points that logs written before the package took its present layout store, kept importable.

A log's header (``meta.json``) stores its env's spec, whose wrappers are named by entry points such as
``rlwrappers.interventions:Intervene``, and Gymnasium imports them to rebuild the env. Two such classes have
moved; each old module path in :data:`MOVED` is served by a small module holding only the names a log can
store, taken from their present homes. Nothing else of the old modules is kept.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Final

__all__ = ["MOVED", "install"]

#: Old module path -> (present module, the names logs store under the old path).
MOVED: Final = {
    "rlwrappers.interventions": ("rlwrappers.wrappers.state", ("Intervene",)),
    "rlwrappers.evaluation": ("rlwrappers.wrappers.atari", ("LivesAsEpisodes",)),
}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and builds the modules of :data:`MOVED`, and no other."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return None  # the default module

    def exec_module(self, module: ModuleType) -> None:
        home, names = MOVED[module.__name__]
        source = importlib.import_module(home)
        module.__doc__ = f"Kept for logs that store this path: {', '.join(names)}, now in :mod:`{home}`."
        vars(module)["__all__"] = list(names)
        for name in names:
            setattr(module, name, getattr(source, name))


def install() -> None:
    """Makes the old paths of :data:`MOVED` importable (once per process)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
