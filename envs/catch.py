"""Catch as an image: a ball falls down a 10 x 5 grid and a one-cell paddle on the bottom row catches it.

The classic toy task of reinforcement learning (Mnih et al. 2014, *Recurrent Models of Visual Attention*;
bsuite's ``catch``), drawn as an 84 x 84 grayscale frame so that image agents, gradient attacks and image
corruptions can be studied on something two CPU cores learn in minutes.

**Rules.** A ball appears in a uniformly random column of the top row (row 0) and falls one row per step.
The paddle sits on the bottom row (row 9) and starts an episode in the middle column (2). Each step the
paddle first moves (action 0: left, 1: stay, 2: right, clipped at the walls), then the ball falls one row.
When the ball reaches the bottom row the drop ends: reward +1 if it lands on the paddle's column, -1
otherwise, and 0 on every other step. The paddle stays where it is and the next ball appears at once in a
random column of the top row. An episode is ``balls`` drops of 9 steps each, and ``terminated`` comes with
the reward of the last one. Returns lie in ``-balls .. balls``; :attr:`Catch.min_score` is the fixed
minimum score, ``-balls`` (-10 by default), for :func:`rlwrappers.metrics.normalized_impact`.

**Rendering.** Black background (0). Cell ``(row, col)`` is the block of pixels
``[2 + 8 * row, 2 + 8 * row + 8) x [2 + 16 * col, 2 + 16 * col + 16)``: the grid fills the 80 x 80 pixels
inside a black margin of 2 pixels. The ball is a white block (255), the paddle a grey one (128). Only the
last frame of an episode can show both in one cell, when the last ball is caught: the ball is drawn on top.
Every other frame shows the next drop's ball in the top row. Observations are uint8 of shape (84, 84, 1),
channel last; ``render_mode="rgb_array"`` renders the same frame as (84, 84, 3).

Randomness comes only from ``self.np_random``, seeded by ``reset(seed=...)``: equal seeds give equal
episodes, bit for bit.

Example:
    >>> import gymnasium as gym, rlwrappers.envs
    >>> env = gym.make("rlwrappers/Catch-v0")
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, obs.dtype.name, env.unwrapped.min_score
    ((84, 84, 1), 'uint8', -10)
    >>> row, col = env.unwrapped.ball
    >>> row, int(obs[2 + 8 * row + 4, 2 + 16 * col + 8, 0]), int(obs[78, 2 + 16 * 2 + 8, 0])
    (0, 255, 128)
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers import _check
from rlwrappers.error import InvalidArgument

__all__ = ["Catch"]

ROWS: Final = 10
COLUMNS: Final = 5
#: The frame's side in pixels, and the size of one cell.
SIZE: Final = 84
CELL_HEIGHT: Final = 8
CELL_WIDTH: Final = 16
#: The black margin around the grid, in pixels.
MARGIN: Final = 2
#: Grey levels.
BACKGROUND: Final = 0
BALL: Final = 255
PADDLE: Final = 128

#: The pixel block of each cell, ``_CELLS[row][col]``, as slices into an (84, 84, 1) frame.
_CELLS: Final = tuple(
    tuple(
        (
            slice(MARGIN + CELL_HEIGHT * row, MARGIN + CELL_HEIGHT * (row + 1)),
            slice(MARGIN + CELL_WIDTH * col, MARGIN + CELL_WIDTH * (col + 1)),
        )
        for col in range(COLUMNS)
    )
    for row in range(ROWS)
)


class Catch(gym.Env[NDArray[np.uint8], np.int64]):
    """Catch on a 10 x 5 grid rendered as (84, 84, 1) uint8 frames; see :mod:`rlwrappers.envs.catch`.

    Registered as ``rlwrappers/Catch-v0``. Actions: 0 moves the paddle left, 1 keeps it, 2 moves it right.

    Args:
        balls: the number of drops in an episode, >= 1; returns lie in ``-balls .. balls``.
        render_mode: None or ``"rgb_array"``.

    Raises:
        InvalidArgument: ``balls`` is below 1, or ``render_mode`` is not one of those above.
        InvalidType: ``balls`` is not an integer.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    rows: ClassVar[int] = ROWS
    columns: ClassVar[int] = COLUMNS
    #: The number of steps of one drop: the ball falls from row 0 to row 9.
    steps_per_ball: ClassVar[int] = ROWS - 1

    def __init__(self, balls: int = 10, render_mode: str | None = None):
        balls = _check.integer("balls", balls, minimum=1)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise InvalidArgument(f"`render_mode` must be None or 'rgb_array', received {render_mode!r}")
        self.balls = balls
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(0, 255, (SIZE, SIZE, 1), np.uint8)
        self.action_space = gym.spaces.Discrete(3)
        self._ball_row = 0
        self._ball_col = 0
        self._paddle = COLUMNS // 2
        self._drops = 0
        self._caught = 0

    @property
    def min_score(self) -> int:
        """The fixed minimum score of an episode: every ball missed, ``-balls``."""
        return -self.balls

    @property
    def max_score(self) -> int:
        """The best score of an episode: every ball caught, ``balls``."""
        return self.balls

    @property
    def ball(self) -> tuple[int, int]:
        """The ball's cell, ``(row, column)``."""
        return self._ball_row, self._ball_col

    @property
    def paddle(self) -> int:
        """The paddle's column (its row is the bottom one)."""
        return self._paddle

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NDArray[np.uint8], dict[str, Any]]:
        """Starts an episode: the paddle in the middle column, the first ball in a random top-row column."""
        super().reset(seed=seed)
        self._paddle = COLUMNS // 2
        self._drops = 0
        self._caught = 0
        self._new_ball()
        return self._frame(), self._info()

    def step(self, action: Any) -> tuple[NDArray[np.uint8], float, bool, bool, dict[str, Any]]:
        """Moves the paddle, lets the ball fall one row, and scores the drop when the ball reaches the bottom."""
        try:
            move = int(action)
        except (TypeError, ValueError):
            move = -1
        if not 0 <= move <= 2 or move != action:
            raise InvalidArgument(f"`action` must be 0 (left), 1 (stay) or 2 (right), received {action!r}")
        self._paddle = min(max(self._paddle + move - 1, 0), COLUMNS - 1)
        self._ball_row += 1
        reward, terminated = 0.0, False
        if self._ball_row == ROWS - 1:
            caught = self._ball_col == self._paddle
            self._caught += caught
            self._drops += 1
            reward = 1.0 if caught else -1.0
            terminated = self._drops == self.balls
            if not terminated:
                self._new_ball()
        return self._frame(), reward, terminated, False, self._info()

    def render(self) -> NDArray[np.uint8] | None:
        """The current frame as (84, 84, 3) RGB when ``render_mode="rgb_array"``; None otherwise."""
        if self.render_mode is None:
            gym.logger.warn("Catch.render() was called without a render_mode; pass render_mode='rgb_array'")
            return None
        return np.repeat(self._frame(), 3, axis=2)

    def _new_ball(self) -> None:
        self._ball_row = 0
        self._ball_col = int(self.np_random.integers(COLUMNS))

    def _frame(self) -> NDArray[np.uint8]:
        frame = np.zeros((SIZE, SIZE, 1), np.uint8)
        frame[_CELLS[ROWS - 1][self._paddle]] = PADDLE
        frame[_CELLS[self._ball_row][self._ball_col]] = BALL
        return frame

    def _info(self) -> dict[str, Any]:
        return {"drops": self._drops, "caught": self._caught}
