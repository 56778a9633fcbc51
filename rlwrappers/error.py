"""Errors raised by rlwrappers.

Every class also subclasses the matching built-in exception, so code that catches ``ValueError`` or
``TypeError`` keeps working. Messages name the argument, the rule it broke and what was received, in the
style of Gymnasium: "`std` must be >= 0, received -1.0".
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "CannotCalibrate",
    "Error",
    "IncompatibleSpace",
    "InvalidArgument",
    "InvalidProbability",
    "InvalidType",
    "LogError",
    "MissingExtra",
    "MissingFile",
    "NotDifferentiable",
    "PerturbationError",
    "SpecSyntaxError",
    "StateNotSettable",
    "UnknownName",
    "UntrustedFileWarning",
    "did_you_mean",
]


class Error(Exception):
    """Base class of every error rlwrappers raises."""


class InvalidArgument(Error, ValueError):
    """An argument has the right type but a value outside what is allowed."""


class InvalidProbability(InvalidArgument):
    """A probability lies outside [0, 1]."""


class InvalidType(Error, TypeError):
    """An argument has a type the callee does not accept."""


class UnknownName(Error, ValueError):
    """A perturbation, schedule, parameter or env name is not known."""


class SpecSyntaxError(Error, ValueError):
    """A spec string could not be parsed; the message shows where parsing failed."""


class IncompatibleSpace(Error, TypeError):
    """A perturbation cannot act on the env's observation or action space."""


class StateNotSettable(Error, TypeError):
    """A state perturbation was asked of an env whose state cannot be read and set."""


class MissingExtra(Error, ImportError):
    """An optional dependency is not installed; the message names the extra that provides it."""


class CannotCalibrate(Error, ValueError):
    """An env cannot be given a provisional ladder; the message says why and which option would fix it."""


class LogError(Error, OSError):
    """A log directory is missing, incomplete or not an rlwrappers log."""


class MissingFile(Error, FileNotFoundError):
    """A file the call needs (agent weights, a log) does not exist; the message names it and where it goes."""


class UntrustedFileWarning(UserWarning):
    """A file whose loading runs the code it stores was loaded without saying it is trusted."""


class NotDifferentiable(Error, TypeError):
    """The agent has no network output of the kind asked for (a plain callable, or no logits)."""


class PerturbationError(Error, ArithmeticError):
    """A perturbation produced a non-finite observation or reward while the env ran.

    The message names the perturbation (its label and spec) and the time and episode. A perturbation given
    ``allow_nonfinite=True`` lets non-finite values through instead.
    """


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Returns `` Did you mean `x`?`` for the closest of ``choices``, or an empty string."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" Did you mean `{close[0]}`?" if close else ""
