"""Agents as RL Zoo saves them: run folders, the flat layout of its published agents, and SB3 zips.

:func:`read_training` finds the model and what it was trained behind (:class:`~rlwrappers.agents.training.Training`)
in three layouts:

- **an RL Zoo run folder**, ``logs/ALGO/ENV_N/`` as ``python -m rl_zoo3.train`` writes it: the model
  ``ENV.zip`` (``best_model.zip`` on request), and beside it the folder ``ENV/`` with ``args.yml``,
  ``config.yml`` and, for a normalized agent, ``vecnormalize.pkl`` (``ENV`` is the env ID with ``/`` as ``-``);
- **the flat layout of RL Zoo's published agents**: one zip with ``config.yml``, ``env_kwargs.yml``,
  ``vec_normalize.pkl`` (when normalized) and ``args.yml`` beside it;
- **an SB3 zip** anywhere else: ``vec_normalize.pkl`` beside it is used when there; otherwise the agent is
  played on raw observations, and the record says so (a zip alone cannot tell whether it was normalized).

A zip inside either layout is read with its layout. The env ID and ``gym_packages`` come from ``args.yml``;
``env_wrapper``, ``vec_env_wrapper`` (SB3's ``VecFrameStack``, the one RL Zoo's files use, played env-side as
:class:`~rlwrappers.wrappers.frames.StackFrames`), ``frame_stack`` and ``normalize`` from ``config.yml``; the
env's keyword arguments from the config, replaced by ``env_kwargs.yml``'s and then by ``args.yml``'s when they
are set (as RL Zoo's ``enjoy`` does). RL Zoo writes Python objects into its YAML files and its statistics are a
pickle, so reading them runs code: read only folders you trust.
"""

from __future__ import annotations

import ast
import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from rlwrappers._optional import require
from rlwrappers.agents.training import Training, WrapperSpec, read_normalization
from rlwrappers.error import InvalidArgument, InvalidType, MissingFile
from rlwrappers.wrappers.frames import StackFrames

__all__ = ["BEST_MODEL", "FLAT_STATISTICS", "RUN_STATISTICS", "AgentFiles", "is_agent_files", "read_training"]

#: RL Zoo's best model of a run (saved by its evaluation callback).
BEST_MODEL: Final = "best_model.zip"

#: The statistics file of an RL Zoo run folder, in its config folder.
RUN_STATISTICS: Final = "vecnormalize.pkl"

#: The statistics file of the flat layout of RL Zoo's published agents.
FLAT_STATISTICS: Final = "vec_normalize.pkl"


@dataclass(frozen=True)
class AgentFiles(os.PathLike[str]):
    """An agent's files with how to read them: a path that also says ``best`` and ``raw_observations``.

    It is a path (``os.fspath`` gives ``path``), so it goes wherever an agent's path goes: ``rw.evaluate``,
    ``rw.load_agent``, the card. Each worker of an evaluation reads the files again with these options.

    Args:
        path: an RL Zoo run folder, a published agent's folder, or an SB3 zip.
        best: RL Zoo's ``best_model.zip`` of a run folder, with the run's final statistics.
        raw_observations: play on raw observations even where statistics are found.

    Example:
        >>> from rlwrappers.agents.rl_zoo import AgentFiles
        >>> str(AgentFiles("logs/ppo/CartPole-v1_1", best=True))
        'logs/ppo/CartPole-v1_1'
    """

    path: str
    best: bool = False
    raw_observations: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.path, (str, os.PathLike)):
            raise InvalidType(f"`path` must be a path, received {self.path!r}")
        object.__setattr__(self, "path", os.fspath(self.path))
        for name in ("best", "raw_observations"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidType(f"`{name}` must be a bool, received {getattr(self, name)!r}")

    def __fspath__(self) -> str:
        return self.path

    def __str__(self) -> str:
        return self.path


def is_agent_files(source: str | os.PathLike[str]) -> bool:
    """Whether ``source`` names files :func:`read_training` reads: an SB3 zip, or a folder (RL Zoo's layouts)."""
    path = Path(source)
    return path.suffix == ".zip" or path.is_dir()


@dataclass(frozen=True)
class _Layout:
    """Where a model's files are: the model, the folder of its config (None for a zip alone), and the layout."""

    model: Path
    config: Path | None
    source: str
    statistics: Path


def read_training(source: str | os.PathLike[str], *, best: bool = False, raw_observations: bool = False) -> Training:
    """The model of ``source`` and what it was trained behind; see the module's docs for the layouts.

    Args:
        source: an RL Zoo run folder, a folder in the published flat layout, or an SB3 zip.
        best: take RL Zoo's ``best_model.zip`` of a run folder, with the run's final statistics (as ``enjoy
            --load-best`` does).
        raw_observations: play on raw observations even where statistics are found.

    Raises:
        MissingFile: the source, its model, or the statistics its config asks for are missing.
        InvalidArgument: the folder is no layout rlwrappers reads, or its config asks for what rlwrappers
            cannot apply (a ``vec_env_wrapper`` other than ``VecFrameStack``).
    """
    if isinstance(source, AgentFiles):
        best, raw_observations = best or source.best, raw_observations or source.raw_observations
    layout = _find(Path(source), best)
    config = _read_yaml(layout.config / "config.yml") if layout.config is not None else {}
    args = _read_yaml(layout.config / "args.yml") if layout.config is not None else {}
    for package in args.get("gym_packages") or ():
        try:
            importlib.import_module(package)
        except ImportError as error:
            raise InvalidArgument(f"the agent's args.yml names gym package {package!r}: {error}") from error
    env_kwargs = dict(config.get("env_kwargs") or {})
    if layout.config is not None and (layout.config / "env_kwargs.yml").is_file():
        env_kwargs = dict(_read_yaml(layout.config / "env_kwargs.yml") or env_kwargs)
    if args.get("env_kwargs") is not None:
        env_kwargs = dict(args["env_kwargs"])
    normalization, raw_why = None, None
    if raw_observations:
        raw_why = "asked for"
    elif layout.config is not None and not _normalized(config.get("normalize", False)):
        raw_why = "its config trains without normalize"
    elif layout.statistics.is_file():
        normalization = read_normalization(layout.statistics)
        if normalization is None:
            raw_why = f"{str(layout.statistics)!r} does not normalize observations (norm_obs is False)"
    elif layout.config is not None:
        raise MissingFile(f"the agent's config asks for normalize, and {str(layout.statistics)!r} is missing")
    else:
        raw_why = (
            f"no {FLAT_STATISTICS} beside the zip, and a zip alone cannot say whether the agent was trained on"
            " normalized observations"
        )
    return Training(
        source=layout.source,
        model=str(layout.model),
        env_id=args.get("env"),
        env_kwargs=env_kwargs,
        gym_packages=tuple(args.get("gym_packages") or ()),
        env_wrappers=WrapperSpec.parse(config.get("env_wrapper"), "env_wrapper"),
        vec_env_wrappers=_vec_env_wrappers(config.get("vec_env_wrapper"), layout),
        frame_stack=int(config.get("frame_stack") or 0),
        normalization=normalization,
        raw_why=raw_why,
        best=best,
        raw_observations=raw_observations,
    )


#: The VecEnv wrappers rlwrappers plays env-side, by import path: SB3's frame stack, as a StackFrames.
VEC_FRAME_STACK: Final = frozenset(
    {"stable_baselines3.common.vec_env.VecFrameStack", "stable_baselines3.common.vec_env.vec_frame_stack.VecFrameStack"}
)


def _vec_env_wrappers(entries: Any, layout: _Layout) -> tuple[WrapperSpec, ...]:
    """RL Zoo's ``vec_env_wrapper`` entries as env-side wrappers: ``VecFrameStack`` becomes a StackFrames.

    Any other VecEnv wrapper is refused with its name: rlwrappers plays each env on its own.
    """
    out = []
    for spec in WrapperSpec.parse(entries, "vec_env_wrapper"):
        kwargs = dict(spec.kwargs)
        frames, order = kwargs.pop("n_stack", None), kwargs.pop("channels_order", None)
        if spec.path not in VEC_FRAME_STACK or frames is None or kwargs:
            raise InvalidArgument(
                f"{str(layout.config)!r} trains behind vec_env_wrapper {spec.path!r} with {dict(spec.kwargs)};"
                " rlwrappers plays each env on its own and applies only VecFrameStack(n_stack, channels_order)"
                " there: evaluate this agent with RL Zoo instead"
            )
        out.append(
            WrapperSpec(f"{StackFrames.__module__}.{StackFrames.__name__}", {"frames": frames, "channels_order": order})
        )
    return tuple(out)


def _find(source: Path, best: bool) -> _Layout:
    """The layout of ``source``: a zip (in a run folder, in the flat layout, or alone) or a folder."""
    if not source.exists():
        raise MissingFile(f"`agent` {str(source)!r} does not exist")
    if source.is_file():
        if source.suffix != ".zip":
            raise InvalidArgument(f"`agent` {str(source)!r} is a file but not an SB3 .zip")
        if best:
            raise InvalidArgument(f"`best` picks the best model of a run folder, and {str(source)!r} is a zip")
        return _of_zip(source)
    configs = _runs(source)
    if len(configs) > 1:
        raise InvalidArgument(f"`agent` {str(source)!r} holds several runs ({[c.name for c in configs]}): pass one zip")
    if configs:
        model = source / BEST_MODEL if best else configs[0].with_suffix(".zip")
        if not model.is_file():
            raise MissingFile(f"the run folder {str(source)!r} has no {model.name}")
        return _Layout(model, configs[0], "rl-zoo-run", configs[0] / RUN_STATISTICS)
    zips = sorted(p for p in source.glob("*.zip") if p.name != BEST_MODEL)
    if (source / "config.yml").is_file() and len(zips) == 1:
        if best:
            raise InvalidArgument(f"`best` picks the best model of a run folder, and {str(source)!r} is a flat layout")
        return _Layout(zips[0], source, "rl-zoo-published", source / FLAT_STATISTICS)
    raise InvalidArgument(_not_an_agent_folder(source))


def _of_zip(model: Path) -> _Layout:
    folder = model.parent
    named = folder / model.stem
    if (named / "config.yml").is_file():
        return _Layout(model, named, "rl-zoo-run", named / RUN_STATISTICS)
    if model.name == BEST_MODEL:
        configs = _runs(folder)
        if len(configs) == 1:
            return _Layout(model, configs[0], "rl-zoo-run", configs[0] / RUN_STATISTICS)
    if (folder / "config.yml").is_file():
        return _Layout(model, folder, "rl-zoo-published", folder / FLAT_STATISTICS)
    return _Layout(model, None, "sb3-zip", folder / FLAT_STATISTICS)


def _runs(folder: Path) -> list[Path]:
    """The config folders of the RL Zoo runs in ``folder``: each ``ENV/`` with ``config.yml``, beside ``ENV.zip``."""
    return sorted(p.parent for p in folder.glob("*/config.yml") if p.parent.with_suffix(".zip").is_file())


def _not_an_agent_folder(folder: Path) -> str:
    """Why a folder given as an agent is not one, and the files in it (or one level down) that may be."""
    zips = sorted(str(p) for p in (*folder.glob("*.zip"), *folder.glob("*/*.zip")))
    if not zips:
        found = "found none"
    else:
        shown = ", ".join(repr(z) for z in zips[:5]) + (f" and {len(zips) - 5} more" if len(zips) > 5 else "")
        found = f"found {shown}: pass one of them as the agent"
    return (
        f"`agent` {str(folder)!r} is a folder but neither an RL Zoo run folder (ENV.zip beside ENV/config.yml) nor"
        " the flat layout of a published agent (one zip beside config.yml). It looked for .zip files in the folder"
        f" and in its subfolders, and {found}"
    )


def _read_yaml(path: Path) -> Any:
    """A YAML file RL Zoo wrote (with Python objects in it, so read with PyYAML's unsafe loader); {} when absent."""
    if not path.is_file():
        return {}
    yaml = require("yaml", purpose="reading RL Zoo's config files")
    try:
        with path.open() as file:
            data = yaml.load(file, Loader=yaml.UnsafeLoader)  # the caller has said the folder is trusted
    except yaml.YAMLError as error:
        raise InvalidArgument(f"{str(path)!r} is not valid YAML: {error}") from error
    if isinstance(data, list):  # older RL Zoo configs are lists of (key, value) pairs
        data = dict(data)
    return {} if data is None else data


def _normalized(value: Any) -> bool:
    """Whether RL Zoo's ``normalize`` hyperparameter asks for observation statistics (a bool, dict or its text)."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value.strip() not in ("", "False", "false")
    return bool(value)  # a dict of VecNormalize's arguments asks for them; the file says whether it normalizes
