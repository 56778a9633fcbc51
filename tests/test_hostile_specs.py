"""Hostile spec strings get typed errors, short messages and quick answers, from the parser and the command line.

Each input is refused within a second with a :class:`~rlwrappers.error.SpecSyntaxError` (or another typed
error of the library) whose message quotes at most :data:`rlwrappers.spec.QUOTED` characters of it; the
command line prints one line of error and exits with 2, never a traceback.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import time

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlwrappers as rw
from rlwrappers import cli, spec
from rlwrappers.error import Error, InvalidArgument, SpecSyntaxError

OUT = os.path.join(tempfile.gettempdir(), f"rlwrappers-hostile-{os.getpid()}")
HOSTILE = {
    "a keyword given twice": "obs_noise(std=0.1, std=0.2)",
    "full-width letters": "obs_noise(\uff53\uff54\uff44=0.1)",
    "nan": "obs_noise(std=nan)",
    "inf": "dynamics_shift(values={'gravity': inf})",
    "deep negation": "~" * 1000 + "always",
    "deep conjunction": " & ".join(["always"] * 3000),
    "deep lists": "obs_noise(std=" + "[" * 100 + "0.1" + "]" * 100 + ")",
    "deep parentheses": "(" * 300 + "always" + ")" * 300,
    "a megabyte": "obs_noise(std=0.1, label='" + "x" * 1_000_000 + "')",
    "a null byte": "obs_noise(std=0.1)\x00",
    "a lambda": "obs_noise(std=(lambda: 1)())",
    "an attribute": "obs_noise(std=__import__('os').getpid())",
    "a format string": "obs_noise(label=f'{1}')",
    "a walrus": "obs_noise(std=(x := 1))",
}


def refused(text: str) -> str:
    """The message of the typed error ``text`` raises, read within a second."""
    start = time.perf_counter()
    with pytest.raises(Error) as caught:
        rw.wrap(gym.make("CartPole-v1"), text)
    assert time.perf_counter() - start < 1.0
    return str(caught.value)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_specs_are_refused_quickly_with_short_messages(name: str) -> None:
    message = refused(HOSTILE[name])
    assert len(message) < 4 * spec.QUOTED + 200, message


def test_what_each_refusal_says() -> None:
    assert "`std` is given twice" in refused(HOSTILE["a keyword given twice"])
    assert "is not an ASCII name" in refused(HOSTILE["full-width letters"])
    assert "`nan` is not a finite number" in refused(HOSTILE["nan"])
    assert "`inf` is not a finite number" in refused(HOSTILE["inf"])
    assert f"nested deeper than {spec.MAX_DEPTH} levels" in refused(HOSTILE["deep negation"])
    assert f"longer than {spec.MAX_LENGTH} characters" in refused(HOSTILE["a megabyte"])
    with pytest.raises(InvalidArgument, match="at most 64 characters"):
        rw.wrap(gym.make("CartPole-v1"), "obs_noise(label='" + "x" * 65 + "')")
    rw.wrap(gym.make("CartPole-v1"), "obs_noise(label='" + "x" * 64 + "')")  # the longest label


def test_a_refusal_quotes_the_failing_part() -> None:
    text = "obs_noise(std=0.1, " + "".join(f"k{i}=1, " for i in range(40)) + "std=0.2)"
    with pytest.raises(SpecSyntaxError) as caught:
        spec.parse(text)
    first, excerpt, caret = str(caught.value).splitlines()
    assert first.startswith(f"could not parse spec {text[:77]!r}"[:-1]) and f"at column {len(text) - 7}" in first
    assert excerpt.strip().startswith("...") and excerpt.strip().endswith("std=0.2)")
    assert excerpt[caret.index("^") :].startswith("std=0.2")  # the caret points at the repeated keyword


@settings(max_examples=300, deadline=1000)
@given(st.text(max_size=300))
def test_random_text_parses_or_is_refused_with_a_typed_error(text: str) -> None:
    try:
        spec.parse(text)
    except SpecSyntaxError as error:
        assert len(str(error)) < 4 * spec.QUOTED + 200


@settings(max_examples=100, deadline=2000)
@given(st.one_of(st.sampled_from(sorted(HOSTILE.values())), st.text(alphabet="()[]{}~&|=,.'\"0123456789abc_ ")))
def test_the_command_line_answers_hostile_specs_with_its_error_not_a_traceback(text: str) -> None:
    try:
        spec.parse(text)
    except SpecSyntaxError:
        pass
    else:
        return  # a valid spec would start a real evaluation: only refused ones are fed to the command line
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(
            ["evaluate", "--agent", "ppo-CartPole-v1", "--env", "CartPole-v1", "--out", OUT, "--shift", text]
        )
    assert code == 2
    assert err.getvalue().startswith("rlwrappers evaluate: error: ") and "Traceback" not in err.getvalue()
    assert len(err.getvalue()) < 4 * spec.QUOTED + 300
    assert not os.path.exists(OUT)  # refused before anything was written
