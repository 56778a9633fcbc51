"""Checks the rules of the package's layout that import-linter's contracts cannot express; exits 1 if one fails.

    python scripts/check_architecture.py

It parses every module of ``rlwrappers/`` and of ``envs/`` (installed as ``rlwrappers.envs``, which
import-linter does not see) with :mod:`ast`, builds their import graph with :mod:`grimp`, and reports:

* **import cycles**: a module that imports itself through other modules. Imports inside functions count;
  imports under ``if TYPE_CHECKING:`` do not. As in grimp and import-linter, ``import a.b.c`` is an import of
  ``a.b.c``, not of its parent packages.
* **walls**: a module of a package of :data:`WALLS` that imports, directly or through other modules, what the
  package may not import. These are the rules about ``rlwrappers.envs``; import-linter's contracts hold the rest.
* **private names used outside their module**: ``from m import _x`` or ``m._x`` where ``m`` is another module
  of the package, and ``obj._x`` or ``getattr(obj, "_x")`` (``setattr``, ``hasattr``, ``delattr``) where
  ``obj`` is not ``self``, ``cls`` or ``super()`` and the module defines no ``_x`` itself (a function, a
  class, a module or class attribute, ``self._x = ...``). Private modules (``rlwrappers._check``) may be
  imported anywhere, and dunder names are public. A third-party library's private name is allowed only in
  :data:`THIRD_PARTY_PRIVATE_HOMES` and :data:`THIRD_PARTY_PRIVATE_EXCEPTIONS`, on a line that has, or under a
  line that has, a comment saying "private" (and why).
"""

from __future__ import annotations

import ast
import io
import itertools
import re
import sys
import tokenize
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
#: Each package and the folder it is installed from (pyproject.toml's ``package-dir``).
SOURCES: dict[str, Path] = {"rlwrappers": ROOT / "rlwrappers", "rlwrappers.envs": ROOT / "envs"}
#: Package -> the packages it may not import, directly or through other modules.
WALLS: dict[str, tuple[str, ...]] = {
    # The envs are simulators, below everything that measures, runs studies or reports.
    "rlwrappers.envs": ("rlwrappers.metrics", "rlwrappers.studies", "rlwrappers.report", "rlwrappers.cli"),
    # The metrics import only error, _check, _optional and functional of the package.
    "rlwrappers.metrics": ("rlwrappers.envs",),
    # The functional core imports no gymnasium, which the envs are built on.
    "rlwrappers.functional": ("rlwrappers.envs",),
}
#: Where third-party private names may be used (with a comment): the code that reads and writes simulators' state.
THIRD_PARTY_PRIVATE_HOMES = ("rlwrappers.state", "rlwrappers.envs.toybox")
#: Third-party private names that one module outside those homes may use (with a comment), and why.
THIRD_PARTY_PRIVATE_EXCEPTIONS: dict[str, frozenset[str]] = {
    # The env contract compares an env's random generator before and after calls; Gymnasium's public
    # ``np_random`` would seed one where there is none, and so change what it checks.
    "rlwrappers.testing.contract": frozenset({"_np_random"}),
    # Registration warns when an ID cannot reach the children of a forkserver that is already running, which
    # keeps the environment it started with; multiprocessing says whether one runs only privately.
    "rlwrappers.registration": frozenset({"_forkserver", "_forkserver_pid"}),
}
#: Underscored names that are public API: a namedtuple's methods and fields.
PUBLIC_UNDERSCORED = frozenset({"_asdict", "_replace", "_make", "_fields", "_field_defaults"})
#: Builtins that take an object and the name of one of its attributes.
ATTRIBUTE_BUILTINS = frozenset({"getattr", "setattr", "hasattr", "delattr"})
SAYS_PRIVATE = re.compile(r"\bprivate\b", re.IGNORECASE)


def is_private(name: str) -> bool:
    """Whether ``name`` is private: a leading underscore, and not a dunder."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_within(name: str, package: str) -> bool:
    """Whether module ``name`` is ``package`` or inside it."""
    return name == package or name.startswith(package + ".")


def display(path: Path) -> str:
    """``path`` relative to the repository, where it is in it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


@dataclass
class Module:
    """One module: its name, its file and its syntax tree."""

    name: str
    path: Path
    is_package: bool
    source: str
    tree: ast.Module = field(init=False)

    def __post_init__(self) -> None:
        self.tree = ast.parse(self.source, str(self.path))

    @property
    def package(self) -> str:
        """The package that this module's relative imports start from."""
        return self.name if self.is_package else self.name.rpartition(".")[0]

    def line(self, number: int) -> str:
        """Line ``number`` (from 1) of the source, stripped."""
        return self.source.splitlines()[number - 1].strip()


@dataclass(frozen=True)
class Import:
    """A name bound by an import: ``import module`` or ``from module import name``, ``module`` absolute."""

    module: str
    name: str | None
    line: int

    @property
    def target(self) -> str:
        """The dotted name imported: ``module`` or ``module.name``."""
        return self.module if self.name is None else f"{self.module}.{self.name}"


class Package:
    """The modules of one or more packages, each read from its folder."""

    def __init__(self, sources: Mapping[str, Path]) -> None:
        self.roots = tuple(sorted(sources))
        self.modules: dict[str, Module] = {}
        for root, folder in sources.items():
            for path in sorted(folder.rglob("*.py")):
                parts = path.relative_to(folder).with_suffix("").parts
                if all(part.isidentifier() for part in parts):
                    is_package = parts[-1] == "__init__"
                    name = ".".join((root, *(parts[:-1] if is_package else parts)))
                    self.modules[name] = Module(name, path, is_package, path.read_text(encoding="utf-8"))
        parents = {name.rsplit(".", up)[0] for name in self.modules for up in range(1, name.count(".") + 1)}
        #: Every module's name, folders without ``__init__.py`` (namespace packages) among them.
        self.names = set(self.modules) | {name for name in parents if self.is_internal(name)}

    def is_internal(self, name: str) -> bool:
        """Whether the dotted ``name`` is in one of the packages."""
        return any(is_within(name, root) for root in self.roots)

    def resolve(self, target: Import) -> str:
        """The module an internal import binds: ``a.b`` for ``from a import b`` where it is one, else ``a``."""
        if target.target in self.names:
            return target.target
        name = target.module
        while name not in self.names and "." in name:  # not a module: the closest package that is one
            name = name.rpartition(".")[0]
        return name


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node below ``tree`` except those under ``if TYPE_CHECKING:`` (its ``else:`` runs, and is kept)."""
    for child in ast.iter_child_nodes(tree):
        yield child
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for node in child.orelse:
                yield node
                yield from runtime_nodes(node)
        else:
            yield from runtime_nodes(child)


def imports_in(module: Module, nodes: Iterable[ast.AST]) -> Iterator[Import]:
    """The imports among ``nodes``, relative ones made absolute."""
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (Import(alias.name, None, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.package.rsplit(".", node.level - 1)[0]
                base = f"{package}.{base}" if base else package
            yield from (Import(base, alias.name, node.lineno) for alias in node.names)


# Imports
# -------


def build_graph(package: Package) -> grimp.ImportGraph:
    """The graph of the imports between the package's modules that run, at import time or in a function."""
    graph = grimp.ImportGraph()
    for name in package.names:
        graph.add_module(name)
    for module in package.modules.values():
        for target in imports_in(module, runtime_nodes(module.tree)):
            imported = package.resolve(target) if package.is_internal(target.module) else None
            if imported is not None and imported != module.name:
                graph.add_import(
                    importer=module.name,
                    imported=imported,
                    line_number=target.line,
                    line_contents=module.line(target.line),
                )
    return graph


def describe(graph: grimp.ImportGraph, chain: Sequence[str]) -> str:
    """``a -> b (line 3 of a) -> c (line 7 of b)``."""
    steps = [chain[0]]
    for importer, imported in itertools.pairwise(chain):
        details = graph.get_import_details(importer=importer, imported=imported)
        lines = ", ".join(str(number) for number in sorted({detail["line_number"] for detail in details}))
        steps.append(f"-> {imported} (line {lines} of {importer})")
    return " ".join(steps)


def find_cycles(graph: grimp.ImportGraph) -> list[str]:
    """The shortest cycle through each import that is on one, each cycle once, the shortest first."""
    cycles: set[tuple[str, ...]] = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                cycle = (importer, *back[:-1])
                start = cycle.index(min(cycle))
                cycles.add(cycle[start:] + cycle[:start])
    return [describe(graph, (*cycle, cycle[0])) for cycle in sorted(cycles, key=lambda cycle: (len(cycle), cycle))]


def find_wall_breaches(graph: grimp.ImportGraph, package: str, forbidden: Iterable[str]) -> list[str]:
    """The chains of imports from ``package`` (or a module in it) to ``forbidden`` modules (or modules in them)."""
    return [
        describe(graph, chain)
        for upstream in forbidden
        if upstream in graph.modules
        for chain in sorted(graph.find_shortest_chains(importer=package, imported=upstream, as_packages=True))
    ]


# Private names
# -------------


def _scope_statements(scope: ast.AST) -> Iterator[ast.AST]:
    """The statements that run in ``scope``'s own namespace (not in its functions or classes)."""
    for child in ast.iter_child_nodes(scope):
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            yield from _scope_statements(child)


def _is_own(node: ast.expr) -> bool:
    """Whether ``node`` is ``self``, ``cls`` or ``super()``: its private names are its class's own."""
    if isinstance(node, ast.Name):
        return node.id in {"self", "cls"}
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def definitions(tree: ast.Module) -> set[str]:
    """The names ``tree`` defines: functions, classes, module and class attributes, ``self.x = ...``, slots."""
    names: set[str] = set()
    for scope in (tree, *(node for node in ast.walk(tree) if isinstance(node, ast.ClassDef))):
        for node in _scope_statements(scope):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "__slots__" for target in node.targets
            ):
                strings = (item for item in ast.walk(node.value) if isinstance(item, ast.Constant))
                names.update(item.value for item in strings if isinstance(item.value, str))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _is_own(node.value):
            names.add(node.attr)
    return names


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of names, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _lines_saying_private(source: str) -> set[int]:
    """The lines whose comment says "private"."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {token.start[0] for token in tokens if token.type == tokenize.COMMENT and SAYS_PRIVATE.search(token.string)}


class PrivateUses:
    """Finds one module's uses of private names that are not its own."""

    def __init__(
        self,
        package: Package,
        module: Module,
        homes: Collection[str] = THIRD_PARTY_PRIVATE_HOMES,
        exceptions: Mapping[str, Collection[str]] = THIRD_PARTY_PRIVATE_EXCEPTIONS,
    ) -> None:
        self.package, self.module = package, module
        self.defined = definitions(module.tree)
        self.says_private = _lines_saying_private(module.source)
        self.homes = tuple(homes)
        self.in_home = any(is_within(module.name, home) for home in homes)
        self.excepted = exceptions.get(module.name, ())
        self.problems: list[tuple[int, int, str]] = []  # line, column, problem
        #: Local name -> the module (or a library's module or name) it is bound to by an import.
        self.bound: dict[str, str] = {}
        for node in ast.walk(module.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias, target in zip(node.names, imports_in(module, [node]), strict=True):
                    if target.name is None:  # ``import a.b`` binds ``a``; ``import a.b as c`` binds ``c``
                        local = alias.asname or target.module.partition(".")[0]
                        self.bound[local] = target.module if alias.asname else local
                    elif target.target in package.names or not package.is_internal(target.module):
                        self.bound[alias.asname or target.name] = target.target

    def find(self) -> list[str]:
        """Every problem, as ``path:line: what``."""
        for node in ast.walk(self.module.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.check_import(node)
            elif isinstance(node, ast.Attribute) and is_private(node.attr):
                self.check_attribute(node, node.value, node.attr)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ATTRIBUTE_BUILTINS
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and is_private(node.args[1].value)
            ):
                self.check_attribute(node, node.args[0], node.args[1].value)
        return [problem for _, _, problem in sorted(self.problems)]

    def report(self, node: ast.expr | ast.stmt, what: str) -> None:
        """Adds a problem at ``node``'s line."""
        self.problems.append((node.lineno, node.col_offset, f"{display(self.module.path)}:{node.lineno}: {what}"))

    def third_party(self, node: ast.expr | ast.stmt, name: str, what: str) -> None:
        """A private name of something outside the package: allowed in its homes, under a comment."""
        first, last = node.lineno, node.end_lineno or node.lineno
        commented = bool(self.says_private & set(range(first - 1, last + 1)))
        if not ((self.in_home or name in self.excepted) and commented):
            self.report(node, f"{what} (only {', '.join(self.homes)} may, under a comment that says why)")

    def check_import(self, node: ast.Import | ast.ImportFrom) -> None:
        """``from m import _x`` of another module ``m``, or of a library."""
        for target in imports_in(self.module, [node]):
            if not self.package.is_internal(target.module):
                private = [part for part in target.target.split(".") if is_private(part)]
                if private:
                    self.third_party(node, private[-1], f"imports the private {target.target}")
            elif (
                target.name is not None
                and is_private(target.name)
                and target.target not in self.package.names  # a private module may be imported anywhere
                and target.module != self.module.name
            ):
                self.report(node, f"imports the private name {target.name} of {target.module}")

    def check_attribute(self, node: ast.expr, owner: ast.expr, attr: str) -> None:
        """``owner._x`` (``attr`` is ``_x``): of an imported module, a library's name or another object."""
        head, _, rest = (_dotted(owner) or "").partition(".")
        if head in self.bound:  # an imported module, or a name taken from a library
            name = f"{self.bound[head]}.{rest}" if rest else self.bound[head]
            if not self.package.is_internal(name):
                self.third_party(node, attr, f"uses the private {name}.{attr}")
            elif f"{name}.{attr}" not in self.package.names and name != self.module.name:  # not a private module
                self.report(node, f"uses the private name {attr} of {name}")
            return
        if _is_own(owner) or attr in self.defined or attr in PUBLIC_UNDERSCORED:
            return
        self.third_party(
            node, attr, f"uses the private {attr} of {ast.unparse(owner)}, which this module does not define"
        )


def find_private_uses(
    package: Package,
    homes: Collection[str] = THIRD_PARTY_PRIVATE_HOMES,
    exceptions: Mapping[str, Collection[str]] = THIRD_PARTY_PRIVATE_EXCEPTIONS,
) -> list[str]:
    """Every use of a private name outside the module that defines it (see the module's docstring)."""
    return [
        problem
        for module in package.modules.values()
        for problem in PrivateUses(package, module, homes, exceptions).find()
    ]


def check(sources: Mapping[str, Path] = SOURCES) -> dict[str, list[str]]:
    """The problems found in the packages of ``sources``, by rule; the rules that found none are left out."""
    package = Package(sources)
    graph = build_graph(package)
    found = {"import cycles": find_cycles(graph)}
    for below, forbidden in WALLS.items():
        if below in graph.modules:
            found[f"{below} imports {', '.join(forbidden)}"] = find_wall_breaches(graph, below, forbidden)
    found["private names used outside their module"] = find_private_uses(package)
    return {rule: problems for rule, problems in found.items() if problems}


def main() -> int:
    """Prints every problem, by rule: 1 if there are any, else 0."""
    found = check()
    for rule, problems in found.items():
        print(f"{rule} ({len(problems)}):")
        print("\n".join(f"  {problem}" for problem in problems))
    if not found:
        print(f"architecture ok: {', '.join(SOURCES)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
