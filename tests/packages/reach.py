"""A small goal-conditioned reacher with a camera, with Dict and Tuple observations, registered when imported.

``Reach-v0``: a point on the unit square takes one of four steps of 0.1 (right, up, left, down) toward a goal drawn
at reset. Its observation is a Dict as goal-conditioned robotics gives one::

    {"observation": [x, y, dx, dy], "achieved_goal": [x, y], "desired_goal": [gx, gy], "camera": 48 x 48 x 3 uint8}

where ``dx, dy`` is the last step and the camera shows the point (red) and the goal (green) on grey. The reward is
minus the distance to the goal; an episode ends within 0.1 of it, or after 40 steps. ``TupleReach-v0`` is the
same env with the observation ``(sensors, camera)``: ``sensors = [x, y, dx, dy, gx, gy]``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

DICT_ID, TUPLE_ID = "Reach-v0", "TupleReach-v0"
SIDE = 48
STEPS = np.array([[0.1, 0.0], [0.0, 0.1], [-0.1, 0.0], [0.0, -0.1]])


class Reach(gym.Env[dict[str, Any], np.int64]):
    """The reacher with a Dict observation."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        unit = gym.spaces.Box(0.0, 1.0, (2,), np.float64)
        self.observation_space = gym.spaces.Dict(
            {
                "observation": gym.spaces.Box(
                    np.array([0, 0, -0.1, -0.1]), np.array([1, 1, 0.1, 0.1]), dtype=np.float64
                ),
                "achieved_goal": unit,
                "desired_goal": unit,
                "camera": gym.spaces.Box(0, 255, (SIDE, SIDE, 3), np.uint8),
            }
        )
        self.action_space = gym.spaces.Discrete(4)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self._point = self.np_random.uniform(0.2, 0.8, 2)
        self._goal = self.np_random.uniform(0.0, 1.0, 2)
        self._step = np.zeros(2)
        return self._observation(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self._step = STEPS[int(action)]
        self._point = np.clip(self._point + self._step, 0.0, 1.0)
        distance = float(np.linalg.norm(self._point - self._goal))
        return self._observation(), -distance, distance < 0.1, False, {}

    def render(self) -> np.ndarray:
        return self._camera()

    def _camera(self) -> np.ndarray:
        frame = np.full((SIDE, SIDE, 3), 128, np.uint8)
        for where, colour in ((self._goal, (40, 200, 40)), (self._point, (220, 40, 40))):
            col, row = np.minimum((where * SIDE).astype(int), SIDE - 1)
            frame[max(row - 2, 0) : row + 3, max(col - 2, 0) : col + 3] = colour
        return frame

    def _observation(self) -> dict[str, Any]:
        return {
            "observation": np.concatenate([self._point, self._step]),
            "achieved_goal": self._point.copy(),
            "desired_goal": self._goal.copy(),
            "camera": self._camera(),
        }


class TupleReach(Reach):
    """The reacher with the observation ``(sensors, camera)``: ``sensors = [x, y, dx, dy, gx, gy]``."""

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(render_mode)
        space = self.observation_space
        low = np.concatenate([space["observation"].low, space["desired_goal"].low])
        high = np.concatenate([space["observation"].high, space["desired_goal"].high])
        self.observation_space = gym.spaces.Tuple((gym.spaces.Box(low, high, dtype=np.float64), space["camera"]))

    def _observation(self) -> tuple[Any, ...]:  # type: ignore[override]
        return np.concatenate([self._point, self._step, self._goal]), self._camera()


if DICT_ID not in gym.registry:
    gym.register(DICT_ID, entry_point=f"{__name__}:Reach", max_episode_steps=40)
    gym.register(TUPLE_ID, entry_point=f"{__name__}:TupleReach", max_episode_steps=40)
