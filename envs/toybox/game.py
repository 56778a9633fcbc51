"""Toybox's Atari games as Gymnasium envs whose game state can be read and written as JSON.

Toybox (Foley et al. 2018, *Toybox: Better Atari Environments for Testing Reinforcement Learning Agents*,
`arXiv:1812.02850 <https://arxiv.org/abs/1812.02850>`_) reimplements Breakout, Amidar and Space Invaders in
Rust. Unlike an emulator's RAM, a Toybox game's state is a readable JSON document: move the ball, remove
bricks or enemies, shift the shields, write it back and play on from there. These are the interventions on
state with which offline robustness and counterfactual explanations are studied.

Registered when :mod:`rlwrappers.envs` is imported and ``ctoybox`` is installed (the ``toybox`` extra), with
the game's legal ALE actions:

- ``rlwrappers/ToyboxBreakout-v0`` (``breakout``): NOOP FIRE RIGHT LEFT;
- ``rlwrappers/ToyboxAmidar-v0`` (``amidar``): NOOP FIRE UP RIGHT LEFT DOWN UPFIRE RIGHTFIRE LEFTFIRE DOWNFIRE;
- ``rlwrappers/ToyboxSpaceInvaders-v0`` (``space_invaders``): NOOP FIRE RIGHT LEFT RIGHTFIRE LEFTFIRE.

**Like ALE's ``NoFrameskip-v4`` envs.** One step is one Toybox frame (``frameskip=1``), actions are
``Discrete(n)`` over the game's legal ALE actions in ALE's order and
:meth:`ToyboxEnv.get_action_meanings` returns ALE's names, ``info["lives"]`` counts lives the way ALE does,
``env.unwrapped.ale`` answers ``lives()`` and ``env.unwrapped.np_random`` is seeded by ``reset``. So
Stable-Baselines3's ``AtariWrapper`` (noop reset, frame skip 4 with max-pooling, episodic life, fire reset,
84 x 84 grayscale warp, reward clipping) and Gymnasium's ``AtariPreprocessing`` apply unchanged. Episodes are
truncated after 108,000 frames (30 minutes at 60 frames per second), as ALE's are.

**Observations.** ``obs_type="rgb"`` (default) gives ``Box(0, 255, (H, W, 3), uint8)`` frames, channel last;
``obs_type="grayscale"`` gives ``(H, W)`` uint8 frames rendered in grayscale by Toybox itself, about three times
cheaper than RGB. The frame sizes are Toybox's, not the Atari's 210 x 160: Breakout is 160 x 240 (H x W),
Amidar 250 x 160, Space Invaders 210 x 320. Every observation is a new C-contiguous array.

**Rewards and episodes.** The reward is the change of the game's score. ``terminated`` is Toybox's game over.
Toybox counts the lives left *besides* the one in play (``toybox.get_lives()``, -1 once the game is over);
``info["lives"]`` and ``ale.lives()`` add one, so that they reach 0 at game over as ALE's count does.
Toybox Breakout therefore starts with 6 lives where the Atari's starts with 5.

**State.** :meth:`ToyboxEnv.state_json` returns the game's state as a dict and
:meth:`ToyboxEnv.write_state_json` replaces it; the game goes on from the written state (its random generator
included), and :meth:`ToyboxEnv.observe` renders the frame an agent would see there.
:meth:`ToyboxEnv.config_json` and :meth:`ToyboxEnv.write_config_json` read and write the game's configuration
(colours, start lives, layouts), which lasts across resets. :meth:`ToyboxEnv.clone_state` and
:meth:`ToyboxEnv.restore_state` save and restore the state without JSON, a hundred times faster.
``env.unwrapped.toybox`` is the raw ``ctoybox.Toybox``.

**Seeding.** ``reset(seed=...)`` seeds ``np_random``, and every reset seeds Toybox's generator with a 32-bit
number drawn from it before starting a new game: equal seeds give equal episodes, bit for bit. (Toybox XORs
its seed into a fixed generator state, so seeds 0, 1, 2 given to it directly would start nearly equal
generators; drawn seeds are spread over all 32 bits.)

Example:
    >>> import gymnasium as gym, rlwrappers.envs
    >>> env = gym.make("rlwrappers/ToyboxBreakout-v0")
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, obs.dtype.name, env.unwrapped.get_action_meanings(), info["lives"]
    ((160, 240, 3), 'uint8', ['NOOP', 'FIRE', 'RIGHT', 'LEFT'], 6)
    >>> state = env.unwrapped.state_json()
    >>> state["paddle"]["position"]["x"] = 40.0
    >>> env.unwrapped.write_state_json(state)
    >>> env.unwrapped.state_json()["paddle"]["position"]["x"]
    40.0
"""

from __future__ import annotations

import importlib
import importlib.util
import operator
from typing import Any, ClassVar, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers import _check, _optional
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType
from rlwrappers.state.interventions import GAMES

__all__ = ["ACTION_MEANINGS", "GAMES", "MAX_EPISODE_FRAMES", "TOYBOX_IDS", "ToyboxALE", "ToyboxEnv"]

#: The registered ID of each game.
TOYBOX_IDS: Final = {
    "breakout": "rlwrappers/ToyboxBreakout-v0",
    "amidar": "rlwrappers/ToyboxAmidar-v0",
    "space_invaders": "rlwrappers/ToyboxSpaceInvaders-v0",
}

#: ALE's 18 actions, indexed by their ALE number.
ACTION_MEANINGS: Final = (
    "NOOP",
    "FIRE",
    "UP",
    "RIGHT",
    "LEFT",
    "DOWN",
    "UPRIGHT",
    "UPLEFT",
    "DOWNRIGHT",
    "DOWNLEFT",
    "UPFIRE",
    "RIGHTFIRE",
    "LEFTFIRE",
    "DOWNFIRE",
    "UPRIGHTFIRE",
    "UPLEFTFIRE",
    "DOWNRIGHTFIRE",
    "DOWNLEFTFIRE",
)

#: Episodes are truncated after this many frames, as ALE's are (30 minutes at 60 frames per second).
MAX_EPISODE_FRAMES: Final = 108_000

OBS_TYPES: Final = ("rgb", "grayscale")


def _rgba_to_rgb_numpy(rgba: NDArray[np.uint8], out: NDArray[np.uint8]) -> None:
    """Copies the RGB bytes of each RGBA pixel of ``rgba`` into the C-contiguous ``out`` of shape (H, W, 3).

    A plain strided copy (``out[...] = rgba[..., :3]``) moves one byte at a time. Here each pixel is moved as
    one 4-byte word to byte offset ``3 * i`` of ``out``, in increasing order, so the stray alpha byte is
    overwritten by the next pixel's red one; the last pixel is copied by its 3 bytes so nothing is written
    past ``out``. A copy of words keeps their byte order whatever the machine's endianness.
    """
    n = rgba.shape[0] * rgba.shape[1]
    words = rgba.reshape(n, 4).view(np.uint32).reshape(n)
    flat = out.reshape(-1)
    if n > 1:
        np.ndarray((n - 1,), np.uint32, buffer=flat, strides=(3,))[...] = words[:-1]
    flat[3 * n - 3 :] = rgba.reshape(n, 4)[n - 1, :3]


def _raise_toybox_error(result: Any) -> None:
    """Raises the error a failed Toybox FFI call returned, as ctoybox itself does, and frees the result.

    Frames are rendered through ctoybox's FFI (``ctoybox.ctoybox.lib``) straight into the caller's buffer,
    which no public call of ctoybox does; ctoybox reads the errors of such calls with
    ``ctoybox.ffi._handle_ffi_result``. This is the one use of a private name of ctoybox.
    """
    from ctoybox.ffi import _handle_ffi_result  # private in ctoybox: its only decoder of FFI errors (see above)

    _handle_ffi_result(result)


class ToyboxALE:
    """The part of ALE's ``ale_py.ALEInterface`` that Atari wrappers use, answered by a :class:`ToyboxEnv`.

    Stable-Baselines3's ``EpisodicLifeEnv`` calls ``env.unwrapped.ale.lives()``; Gymnasium's
    ``AtariPreprocessing`` also calls ``getScreenRGB`` and ``getScreenGrayscale`` with buffers to fill.
    """

    def __init__(self, env: ToyboxEnv):
        self._env = env

    def lives(self) -> int:
        """The lives left, counting the one in play, as ALE counts them: 0 once the game is over."""
        return self._env.lives

    def game_over(self) -> bool:
        """Whether the game is over (Toybox's lives count dropped below 0)."""
        return self._env.game_over

    def getScreenRGB(self, screen_data: NDArray[np.uint8] | None = None) -> NDArray[np.uint8]:
        """The current frame as (H, W, 3) RGB, written into ``screen_data`` when given."""
        return self._env._rgb(screen_data)

    def getScreenGrayscale(self, screen_data: NDArray[np.uint8] | None = None) -> NDArray[np.uint8]:
        """The current frame as (H, W) grayscale, written into ``screen_data`` when given."""
        return self._env._gray(screen_data)

    def getScreenDims(self) -> tuple[int, int]:
        """The frame's (height, width)."""
        return self._env.height, self._env.width

    def getEpisodeFrameNumber(self) -> int:
        """The frames played since the last reset."""
        return self._env.episode_frame_number

    def getFrameNumber(self) -> int:
        """The frames played since the env was made."""
        return self._env.frame_number

    def getMinimalActionSet(self) -> list[int]:
        """The ALE numbers of the game's legal actions, in ALE's order."""
        return list(self._env.ale_actions)


class ToyboxEnv(gym.Env[NDArray[np.uint8], np.int64]):
    """A Toybox game as a Gymnasium env, ALE-compatible; see :mod:`rlwrappers.envs.toybox`.

    Registered as ``rlwrappers/ToyboxBreakout-v0``, ``rlwrappers/ToyboxAmidar-v0`` and
    ``rlwrappers/ToyboxSpaceInvaders-v0`` (``TOYBOX_IDS``), each with ``max_episode_steps=108_000``.

    Args:
        game: the Toybox game, one of ``"breakout"``, ``"amidar"``, ``"space_invaders"``.
        obs_type: ``"rgb"`` for (H, W, 3) frames or ``"grayscale"`` for (H, W) frames, both uint8.
        frameskip: the frames each step repeats its action for, >= 1; the reward is their sum and the
            observation the last frame. Keep 1 (the default) under Atari wrappers, which skip frames themselves.
        full_action_space: use all 18 ALE actions instead of the game's legal ones.
        render_mode: None or ``"rgb_array"`` (``render()`` returns the (H, W, 3) RGB frame).

    Raises:
        UnknownName: ``game`` or ``obs_type`` is not one of those above.
        InvalidArgument: ``frameskip`` is below 1, or ``render_mode`` is not one of those above.
        InvalidType: ``game`` or ``obs_type`` is not a string, ``frameskip`` not an integer, or
            ``full_action_space`` not a bool.
        MissingExtra: ``ctoybox`` is not installed.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 60, "obs_types": list(OBS_TYPES)}

    games: ClassVar[tuple[str, ...]] = GAMES

    def __init__(
        self,
        game: str = "breakout",
        obs_type: str = "rgb",
        frameskip: int = 1,
        full_action_space: bool = False,
        render_mode: str | None = None,
    ):
        game = _check.choice("game", game, GAMES)
        obs_type = _check.choice("obs_type", obs_type, OBS_TYPES)
        frameskip = _check.integer("frameskip", frameskip, minimum=1)
        if not isinstance(full_action_space, (bool, np.bool_)):
            kind = type(full_action_space).__name__
            raise InvalidType(f"`full_action_space` must be a bool, received {full_action_space!r} ({kind})")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise InvalidArgument(f"`render_mode` must be None or 'rgb_array', received {render_mode!r}")
        ctoybox = _optional.require("ctoybox", purpose="the Toybox envs")
        #: orjson reads and writes the JSON states about five times faster than the standard library.
        self._orjson: Any = _optional.require("orjson", purpose="the Toybox envs' JSON states")
        from ctoybox.ctoybox import ffi, lib

        self.game = game
        self.obs_type = obs_type
        self.frameskip = frameskip
        self._frameskip = frameskip  # the name Gymnasium's AtariPreprocessing checks
        self.full_action_space = bool(full_action_space)
        self.render_mode = render_mode
        self._ffi, self._lib = ffi, lib
        # OpenCV converts RGBA to RGB about five times faster than numpy; used when installed.
        self._cv2: Any = importlib.import_module("cv2") if importlib.util.find_spec("cv2") is not None else None
        #: The raw ``ctoybox.Toybox``; its ``rstate`` and ``rsimulator`` are read afresh on every call.
        self.toybox = ctoybox.Toybox(game)
        self.height: int = self.toybox.get_height()
        self.width: int = self.toybox.get_width()
        legal = tuple(int(a) for a in self.toybox.get_legal_action_set())
        #: The ALE number of each action, in the order of the action space.
        self.ale_actions: tuple[int, ...] = tuple(range(len(ACTION_MEANINGS))) if self.full_action_space else legal
        self.action_space = gym.spaces.Discrete(len(self.ale_actions))
        shape = (self.height, self.width, 3) if obs_type == "rgb" else (self.height, self.width)
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        self.ale = ToyboxALE(self)
        self._rgba = np.empty((self.height, self.width, 4), np.uint8)  # RGBA render target, reused
        self._score = 0
        self.episode_frame_number = 0
        self.frame_number = 0

    # -- Gymnasium -----------------------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NDArray[np.uint8], dict[str, Any]]:
        """Starts a new game, Toybox's generator seeded from ``np_random``; the config written so far stays."""
        super().reset(seed=seed)
        self.toybox.set_seed(int(self.np_random.integers(2**32)))
        self.toybox.new_game()
        self._score = self.toybox.get_score()
        self.episode_frame_number = 0
        return self.observe(), self._info(self.toybox.get_lives())

    def step(self, action: Any) -> tuple[NDArray[np.uint8], float, bool, bool, dict[str, Any]]:
        """Plays ``frameskip`` frames of ``action``; the reward is the change of the score."""
        try:
            index = operator.index(action)
        except TypeError:
            raise InvalidType(
                f"`action` must be an integer in [0, {len(self.ale_actions)}), received {action!r}"
            ) from None
        if not 0 <= index < len(self.ale_actions):
            raise InvalidArgument(f"`action` must be in [0, {len(self.ale_actions)}), received {action!r}")
        ale_action = self.ale_actions[index]
        lib = self._lib
        state = self.toybox.rstate.get_state()
        for _ in range(self.frameskip):
            if not lib.state_apply_ale_action(state, ale_action):
                raise InvalidArgument(f"Toybox {self.game} refused ALE action {ale_action}")
        self.episode_frame_number += self.frameskip
        self.frame_number += self.frameskip
        score = lib.state_score(state)
        reward = float(score - self._score)
        self._score = score
        lives = lib.state_lives(state)
        return self.observe(), reward, lives < 0, False, self._info(lives)

    def render(self) -> NDArray[np.uint8] | None:
        """The current frame as (H, W, 3) RGB when ``render_mode="rgb_array"``; None otherwise."""
        if self.render_mode is None:
            gym.logger.warn("ToyboxEnv.render() was called without a render_mode; pass render_mode='rgb_array'")
            return None
        return self._rgb(None)

    def close(self) -> None:
        """Frees Toybox's game and simulator; the env cannot be used afterwards."""
        toybox = self.__dict__.get("toybox")
        if toybox is not None and not toybox.deleted:
            toybox.__exit__(None, None, None)

    def get_action_meanings(self) -> list[str]:
        """ALE's names of the actions, in the order of the action space (``[0]`` is NOOP, ``[1]`` FIRE)."""
        return [ACTION_MEANINGS[a] for a in self.ale_actions]

    # -- the game ------------------------------------------------------------------------------------------
    @property
    def lives(self) -> int:
        """The lives left, counting the one in play, as ALE counts them: Toybox's count plus one, 0 at game over."""
        return max(self.toybox.get_lives() + 1, 0)

    @property
    def game_over(self) -> bool:
        """Whether the game is over (Toybox's lives count dropped below 0)."""
        return bool(self.toybox.game_over())

    @property
    def score(self) -> int:
        """The game's score."""
        return int(self.toybox.get_score())

    def observe(self) -> NDArray[np.uint8]:
        """The observation of the current state, as ``step`` would return it (a new array)."""
        return self._rgb(None) if self.obs_type == "rgb" else self._gray(None)

    def state_json(self) -> dict[str, Any]:
        """The game's state as a JSON-able dict (a fresh copy: editing it changes nothing until written).

        Its keys depend on the game: Breakout has ``balls``, ``paddle``, ``bricks``, ``lives``, ``score``...;
        ``rand`` is the state of the game's random generator.
        """
        raw = self._lib.state_to_json(self.toybox.rstate.get_state())
        try:
            text = self._ffi.string(self._ffi.cast("char *", raw))
        finally:
            self._lib.free_str(raw)
        state: dict[str, Any] = self._orjson.loads(text)
        return state

    def write_state_json(self, state: dict[str, Any]) -> None:
        """Replaces the game's state by ``state`` (as :meth:`state_json` returns it); the game goes on from there.

        The next reward counts from the written score, so writing a state never pays a reward by itself.
        Frame counters and ``np_random`` are left as they are.

        Raises:
            InvalidType: ``state`` is not a dict.
            InvalidArgument: Toybox cannot read ``state`` as a state of this game (the message says why).
        """
        if not isinstance(state, dict):
            raise InvalidType(f"`state` must be a dict as state_json() returns, received {type(state).__name__}")
        try:
            text = self._orjson.dumps(state, option=self._orjson.OPT_SERIALIZE_NUMPY).decode()
        except TypeError as exc:
            raise InvalidType(f"`state` must hold only JSON values: {exc}") from None
        try:
            self.toybox.write_state_json(text)  # ctoybox takes JSON text as well as dicts
        except ValueError as exc:
            raise InvalidArgument(f"`state` is not a valid Toybox {self.game} state: {exc}") from None
        self._score = self.toybox.get_score()

    def clone_state(self) -> Any:
        """A snapshot of the game's state (a ``ctoybox.State``), for :meth:`restore_state`.

        About a hundred times cheaper than :meth:`state_json` (no JSON), but opaque: edit states with
        :meth:`state_json` and :meth:`write_state_json`.
        """
        return self.toybox.rstate.clone()

    def restore_state(self, snapshot: Any) -> None:
        """Puts the game back in the state of ``snapshot``, from :meth:`clone_state` on an env of the same game.

        The snapshot itself stays unchanged and can be restored again. Like :meth:`write_state_json`, the next
        reward counts from the restored score.

        Raises:
            InvalidType: ``snapshot`` is not a live snapshot of this game.
        """
        from ctoybox import State

        if not isinstance(snapshot, State) or snapshot.game_name != self.game or snapshot.deleted:
            raise InvalidType(
                f"`snapshot` must come from clone_state() on a Toybox {self.game} env, received {snapshot!r}"
            )
        self.toybox.rstate = snapshot.clone()
        self._score = self.toybox.get_score()

    def config_json(self) -> dict[str, Any]:
        """The game's configuration as a JSON-able dict (colours, start lives, layouts, ...; a fresh copy)."""
        config: dict[str, Any] = self.toybox.config_to_json()
        return config

    def write_config_json(self, config: dict[str, Any]) -> None:
        """Replaces the game's configuration and starts a new game under it; later resets keep it.

        Raises:
            InvalidType: ``config`` is not a dict.
            InvalidArgument: Toybox cannot read ``config`` as a configuration of this game.
            IncompatibleSpace: the configuration changes the frame's size.
        """
        if not isinstance(config, dict):
            raise InvalidType(f"`config` must be a dict as config_json() returns, received {type(config).__name__}")
        try:
            self.toybox.write_config_json(config)
        except ValueError as exc:
            raise InvalidArgument(f"`config` is not a valid Toybox {self.game} config: {exc}") from None
        if (self.toybox.get_height(), self.toybox.get_width()) != (self.height, self.width):
            raise IncompatibleSpace(
                f"`config` changes the frame from {self.height} x {self.width} to "
                f"{self.toybox.get_height()} x {self.toybox.get_width()}; the observation space cannot follow"
            )
        self._score = self.toybox.get_score()
        self.episode_frame_number = 0

    # -- rendering -----------------------------------------------------------------------------------------
    def _render(self, out: NDArray[np.uint8], grayscale: bool) -> None:
        """Renders the current frame into the C-contiguous uint8 ``out`` of H * W (* 4 unless grayscale) bytes."""
        result = self._lib.render_current_frame(
            self._ffi.from_buffer(out),
            out.size,
            grayscale,
            self.toybox.rsimulator.get_simulator(),
            self.toybox.rstate.get_state(),
        )
        if result.error_message != self._ffi.NULL:
            _raise_toybox_error(result)
        else:
            self._lib.free_ffi_result(result)

    def _gray(self, out: NDArray[np.uint8] | None) -> NDArray[np.uint8]:
        if out is None:
            out = np.empty((self.height, self.width), np.uint8)
        else:
            self._check_buffer(out, 1)
        self._render(out, True)
        return out

    def _rgb(self, out: NDArray[np.uint8] | None) -> NDArray[np.uint8]:
        if out is None:
            out = np.empty((self.height, self.width, 3), np.uint8)
        else:
            self._check_buffer(out, 3)
        self._render(self._rgba, False)
        if self._cv2 is not None:
            self._cv2.cvtColor(self._rgba, self._cv2.COLOR_RGBA2RGB, dst=out.reshape(self.height, self.width, 3))
        else:
            _rgba_to_rgb_numpy(self._rgba, out)
        return out

    def _check_buffer(self, out: Any, channels: int) -> None:
        """Toybox writes exactly H * W * channels bytes through a raw pointer: a wrong buffer must not reach it."""
        size = self.height * self.width * channels
        if not (
            isinstance(out, np.ndarray)
            and out.dtype == np.uint8
            and out.size == size
            and out.flags.c_contiguous
            and out.flags.writeable
        ):
            raise InvalidArgument(
                f"`screen_data` must be a writeable C-contiguous uint8 array of {size} values "
                f"({self.height} x {self.width} x {channels}), received {getattr(out, 'shape', out)!r}"
            )

    def _info(self, toybox_lives: int) -> dict[str, Any]:
        return {
            "lives": max(toybox_lives + 1, 0),
            "episode_frame_number": self.episode_frame_number,
        }
