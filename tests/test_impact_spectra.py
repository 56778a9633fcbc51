"""Normalized impact and per-game minima; Fourier spectra and band energies against numpy and hand-built frames;
their plots."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from rlwrappers.error import InvalidArgument, InvalidType, UnknownName
from rlwrappers.metrics.impact import MIN_SCORES, min_score, normalized_impact
from rlwrappers.metrics.spectra import LUMINANCE, band_energy, band_index, difference_spectrum, log_spectrum, spectrum
from rlwrappers.report import plots

# ----------------------------------------------------------------------------------------------- impact


def test_impact_against_hand_values() -> None:
    assert normalized_impact(400.0, 100.0, 0.0) == 0.75
    assert normalized_impact(400.0, 400.0, 0.0) == 0.0
    assert normalized_impact(400.0, 0.0, 0.0) == 1.0  # down to the minimum: total failure
    assert normalized_impact(400.0, 500.0, 0.0) == -0.25  # the perturbation helped
    assert normalized_impact(21.0, -20.8, "Pong") == pytest.approx(41.8 / 42.0)
    assert normalized_impact(21.0, -21.0, "PongNoFrameskip-v4") == 1.0  # Table 1: score -21.0, impact 1.0
    assert isinstance(normalized_impact(10, 5, 0), float)


def test_impact_broadcasts_like_numpy() -> None:
    clean = np.array([[100.0], [50.0]])  # two agents
    perturbed = np.array([75.0, 50.0, 0.0])  # three perturbations
    out = normalized_impact(clean, perturbed, [0.0, 0.0, 0.0])
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out, [[0.25, 0.5, 1.0], [-0.5, 0.0, 1.0]])
    np.testing.assert_allclose(normalized_impact([10.0, 0.0], [-5.0, -21.0], [-20.0, -21.0]), [0.5, 1.0])


def test_impact_is_nan_without_warning_where_the_clean_score_has_no_room_to_fall() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no divide-by-zero RuntimeWarning leaks out
        out = normalized_impact([0.0, -5.0, 10.0], [0.0, -3.0, 5.0], 0.0)
        single = normalized_impact(-21.0, -21.0, "Pong")
    assert np.isnan(out[0]) and np.isnan(out[1]) and out[2] == 0.5
    assert not np.any(np.isinf(out))
    assert np.isnan(single)


def test_impact_refuses_bad_scores() -> None:
    with pytest.raises(InvalidArgument, match="`clean` must be finite"):
        normalized_impact(np.inf, 1.0, 0.0)
    with pytest.raises(InvalidArgument, match="`perturbed` must be finite"):
        normalized_impact([1.0, 2.0], [np.nan, 1.0], 0.0)
    with pytest.raises(InvalidArgument, match="must broadcast together"):
        normalized_impact([1.0, 2.0], [1.0, 2.0, 3.0], 0.0)
    with pytest.raises(InvalidType, match="`clean` must be a number"):
        normalized_impact("many", 1.0, 0.0)
    # A score under a named game's floor cannot come from that game: it is a mix-up, not an impact.
    with pytest.raises(InvalidArgument, match=re.escape("`perturbed` must be >= 0.0, the lowest score of `Breakout`")):
        normalized_impact(30.0, -1.0, "Breakout")
    with pytest.raises(InvalidArgument, match=re.escape("`clean` must be >= -21.0")):
        normalized_impact(-22.0, -21.0, "ALE/Pong-v5")


@pytest.mark.parametrize(
    ("name", "game"),
    [
        ("Pong", "Pong"),
        ("pong", "Pong"),
        ("PongNoFrameskip-v4", "Pong"),
        ("ALE/Pong-v5", "Pong"),
        ("PongDeterministic-v4", "Pong"),
        ("Pong-ramNoFrameskip-v4", "Pong"),
        ("JamesbondNoFrameskip-v4", "JamesBond"),
        ("ALE/Jamesbond-v5", "JamesBond"),
        ("ms_pacman", "MsPacman"),
        ("SpaceInvadersNoFrameskip-v4", "SpaceInvaders"),
    ],
)
def test_game_names_and_env_ids_resolve(name: str, game: str) -> None:
    assert min_score(name) == MIN_SCORES[game]


def test_every_game_of_the_table_resolves_from_its_registered_ale_ids() -> None:
    ale_py = pytest.importorskip("ale_py")
    gym.register_envs(ale_py)
    for game, minimum in MIN_SCORES.items():
        ids = [
            i
            for i in gym.registry
            if i.split("/")[-1].split("-")[0].removesuffix("NoFrameskip").lower() == game.lower()
        ]
        assert any(i.startswith("ALE/") for i in ids), game
        assert {min_score(i) for i in ids} == {minimum}, game


def test_table_holds_the_papers_games_and_the_rule() -> None:
    seed_004 = {"BankHeist", "JamesBond", "Pong", "Riverraid", "TimePilot"}
    seed_001 = {"Asteroids", "BeamRider", "Breakout", "MsPacman", "Pong", "Qbert", "RoadRunner", "Seaquest"}
    assert seed_004 | seed_001 | {"SpaceInvaders"} <= set(MIN_SCORES)
    assert {g for g, m in MIN_SCORES.items() if m != 0.0} == {"Pong"} and MIN_SCORES["Pong"] == -21.0
    with pytest.raises(TypeError):
        MIN_SCORES["Pong"] = 0.0  # type: ignore[index]


def test_unknown_games_raise_with_a_suggestion() -> None:
    with pytest.raises(UnknownName, match="Did you mean `Breakout`"):
        min_score("Breakuot")
    with pytest.raises(UnknownName, match="Did you mean `Pong`"):
        normalized_impact(10.0, 5.0, "PongggNoFrameskip-v4")
    with pytest.raises(UnknownName, match="no fixed minimum score for `ALE/Boxing-v5`"):
        min_score("ALE/Boxing-v5")
    with pytest.raises(InvalidType, match="`game` must be a game name"):
        min_score(3)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- spectra

RNG = np.random.default_rng(4)


def test_spectrum_is_numpys_fft2() -> None:
    frame = RNG.random((7, 12))
    np.testing.assert_array_equal(spectrum(frame), np.fft.fft2(frame))
    pixels = RNG.integers(0, 256, size=(3, 9, 10), dtype=np.uint8)
    np.testing.assert_allclose(spectrum(pixels, "hw"), np.fft.fft2(pixels.astype(np.float64)), atol=1e-9)


def test_results_keep_batch_axes_and_put_a_stacks_channels_before_the_pixels() -> None:
    stack = RNG.random((2, 6, 8, 4))  # two hwc observations of four stacked frames
    spectra = spectrum(stack)
    assert spectra.shape == (2, 4, 6, 8)
    np.testing.assert_allclose(spectra, np.fft.fft2(np.moveaxis(stack, -1, -3)), atol=1e-9)
    chw = np.moveaxis(stack, -1, -3)
    np.testing.assert_allclose(band_energy(chw), band_energy(stack), rtol=1e-12)
    assert band_energy(stack).shape == (2, 4, 5)


def test_rgb_frames_are_taken_as_their_luminance() -> None:
    rgb = RNG.integers(0, 256, size=(2, 10, 12, 3), dtype=np.uint8)
    luminance = rgb @ np.array(LUMINANCE)
    np.testing.assert_allclose(spectrum(rgb), np.fft.fft2(luminance), atol=1e-8)
    np.testing.assert_allclose(spectrum(np.moveaxis(rgb, -1, -3), "chw"), spectrum(rgb, "hwc"), atol=1e-8)


def test_a_constant_frame_has_all_its_energy_at_zero_frequency() -> None:
    energy = band_energy(np.full((6, 10), 3.0))
    assert energy.shape == (6,)  # bands 0 .. max(6, 10) // 2
    assert energy[0] == pytest.approx(60 * 60 * 9.0)  # |F(0, 0)|^2 = (H W c)^2
    np.testing.assert_allclose(energy[1:], 0.0, atol=1e-9)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_a_cosine_of_k_cycles_puts_its_energy_at_band_k(k: int) -> None:
    height, width = 6, 10  # non-square: bands 0..5, rows hold 0..3 cycles
    x = np.cos(2 * np.pi * k * np.arange(width) / width)[np.newaxis, :] * np.ones((height, 1))
    energy = band_energy(x)
    assert np.argmax(energy) == k
    assert energy[k] == pytest.approx(height * width * np.sum(x**2))
    np.testing.assert_allclose(np.delete(energy, k), 0.0, atol=1e-9)
    if k <= height // 2:  # the same number of cycles down the image lands in the same band
        y = np.cos(2 * np.pi * k * np.arange(height) / height)[:, np.newaxis] * np.ones((1, width))
        assert np.argmax(band_energy(y)) == k
    checker = x * np.cos(2 * np.pi * 1 * np.arange(height) / height)[:, np.newaxis]
    assert np.argmax(band_energy(checker)) == max(k, 1)  # the band is the larger of the two frequencies


@pytest.mark.parametrize(
    ("shape", "layout", "rgb"),
    [
        ((8, 8), None, False),
        ((7, 12), None, False),
        ((5, 9, 16), "hw", False),
        ((3, 10, 6, 4), "hwc", False),
        ((2, 4, 9, 9), "chw", False),
        ((2, 12, 10, 3), "hwc", True),
        ((3, 11, 10), "chw", True),
    ],
)
def test_parseval_holds(shape: tuple[int, ...], layout: str | None, rgb: bool) -> None:
    x = RNG.normal(size=shape) * 50.0 + 100.0
    energy = band_energy(x, layout)
    spectra = spectrum(x, layout)
    height, width = spectra.shape[-2:]
    assert energy.shape[-1] == max(height, width) // 2 + 1
    np.testing.assert_allclose(energy.sum(axis=-1), (np.abs(spectra) ** 2).sum(axis=(-2, -1)), rtol=1e-10)
    if rgb:  # the frames are the luminance images
        luminance = (x if layout == "hwc" else np.moveaxis(x, -3, -1)) @ np.array(LUMINANCE)
        total = height * width * (luminance**2).sum(axis=(-2, -1))
        np.testing.assert_allclose(energy.sum(axis=-1), total, rtol=1e-10)
    else:  # the frames are the input itself
        np.testing.assert_allclose(energy.sum(), height * width * np.sum(x**2), rtol=1e-10)


def test_band_index_counts_every_frequency_once() -> None:
    index = band_index(6, 10)
    assert index.shape == (6, 10) and index.min() == 0 and index.max() == 5
    assert index[0, 0] == 0 and index[0, 9] == 1 and index[3, 2] == 3 and index[5, 5] == 5
    assert np.bincount(index.ravel()).tolist() == [1, 8, 16, 17, 12, 6]  # rows fold to 0..3, columns to 0..5
    with pytest.raises(InvalidArgument, match="`width` must be an integer >= 1"):
        band_index(4, 0)


def test_difference_spectrum_of_identical_frames_is_zero_and_averages_over_the_batch() -> None:
    clean = RNG.integers(0, 256, size=(4, 8, 8), dtype=np.uint8)
    zero = difference_spectrum(clean, clean.copy(), "hw")
    assert zero.shape == (4, 5) and not zero.any()
    brighter = clean.astype(np.float64) + 10.0
    per_frame = difference_spectrum(clean, brighter, "hw")
    np.testing.assert_allclose(per_frame[:, 1:], 0.0, atol=1e-6)  # a brightness offset only touches f = 0
    dc = clean.reshape(4, -1).sum(axis=1).astype(np.float64)
    np.testing.assert_allclose(per_frame[:, 0], (dc + 640.0) ** 2 - dc**2)
    np.testing.assert_allclose(difference_spectrum(clean, brighter, "hw", average=True), per_frame.mean(axis=0))
    with pytest.raises(InvalidArgument, match="the same shape"):
        difference_spectrum(clean, clean[:2], "hw")


def test_log_spectrum_is_centred_and_finite() -> None:
    frame = RNG.random((7, 10))
    expected = np.log1p(np.abs(np.fft.fftshift(np.fft.fft2(frame))))
    np.testing.assert_allclose(log_spectrum(frame), expected)
    centred = log_spectrum(np.ones((7, 10)))
    assert np.argwhere(centred > 1e-9).tolist() == [[3, 5]]  # zero frequency at (H // 2, W // 2)
    assert np.all(np.isfinite(centred))


def test_spectra_refuse_bad_input() -> None:
    with pytest.raises(InvalidArgument, match="cannot tell the image layout"):
        band_energy(np.zeros((4, 84, 4)))  # a channel axis could be at either end
    assert band_energy(np.zeros((10, 84, 84))).shape == (10, 43)  # no channel axis: a batch of frames
    assert band_energy(np.zeros((10, 84, 84)), "hw").shape == (10, 43)
    with pytest.raises(InvalidArgument, match="`layout` must be one of"):
        spectrum(np.zeros((4, 4)), "whc")
    with pytest.raises(InvalidArgument, match="needs 3 axes"):
        spectrum(np.zeros((4, 4)), "hwc")
    with pytest.raises(InvalidArgument, match="at least 2 axes"):
        spectrum(np.zeros(4))
    with pytest.raises(InvalidType, match="real numbers"):
        spectrum(np.zeros((4, 4), np.complex128))
    with pytest.raises(InvalidArgument, match="must be finite"):
        band_energy(np.full((4, 4), np.nan))


@pytest.fixture(scope="module")
def atari_frame() -> np.ndarray:
    """One real RGB frame of Pong, (210, 160, 3) uint8, some steps into the game."""
    ale_py = pytest.importorskip("ale_py")
    gym.register_envs(ale_py)
    env = gym.make("ALE/Pong-v5", frameskip=4, repeat_action_probability=0.0)
    obs, _ = env.reset(seed=0)
    for _ in range(30):
        obs, *_ = env.step(0)
    env.close()
    assert obs.shape == (210, 160, 3) and obs.dtype == np.uint8
    return np.asarray(obs)


def test_a_real_atari_frame_in_any_layout_and_its_shifted_and_noisy_versions(atari_frame: np.ndarray) -> None:
    energy = band_energy(atari_frame)
    assert energy.shape == (106,)
    np.testing.assert_allclose(band_energy(np.moveaxis(atari_frame, -1, 0)), energy, rtol=1e-12)
    np.testing.assert_allclose(band_energy(atari_frame.astype(np.float32)), energy, rtol=1e-6)
    luminance = atari_frame @ np.array(LUMINANCE)
    assert energy.sum() == pytest.approx(210 * 160 * np.sum(luminance**2), rel=1e-10)
    # A circular shift changes only the phases: the energy of every band stays.
    np.testing.assert_allclose(band_energy(np.roll(atari_frame, (2, 1), axis=(0, 1))), energy, rtol=1e-9)
    # White noise spreads energy evenly over frequencies, so it adds most where the frame has least: high f.
    noisy = atari_frame + np.random.default_rng(0).normal(0.0, 8.0, atari_frame.shape)
    change = difference_spectrum(atari_frame, noisy) / energy
    assert change[-20:].mean() > 10 * change[1:20].mean()


# ------------------------------------------------------------------------------------------------ plots


def _states() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    clean = RNG.integers(0, 256, size=(3, 16, 20), dtype=np.uint8)
    brighter = np.clip(clean.astype(np.float64) * 1.2 + 10.0, 0, 255)
    shifted = np.roll(clean, 1, axis=-1)
    noisy = clean + np.random.default_rng(1).normal(0.0, 20.0, clean.shape)
    return clean, {"brightness": brighter, "shift": shifted, "noise": noisy}


def test_fourier_spectra_draw_one_panel_per_state() -> None:
    pytest.importorskip("matplotlib")
    clean, perturbed = _states()
    fig = plots.fourier_spectra(clean, perturbed, layout="hw")
    assert len(fig.axes) == 4
    assert [ax.get_title() for ax in fig.axes] == ["unperturbed", "brightness", "shift", "noise"]
    (image,) = fig.axes[3].get_images()
    np.testing.assert_allclose(image.get_array(), log_spectrum(perturbed["noise"], "hw").mean(axis=0))
    assert len({ax.get_images()[0].get_clim() for ax in fig.axes}) == 1  # one shared colour scale


def test_band_energy_curves_draw_clean_then_each_perturbation(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    clean, perturbed = _states()
    fig = plots.band_energy_curves(clean, perturbed, layout="hw", clean_label="clean")
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["clean", "brightness", "shift", "noise"]
    assert ax.get_yscale() == "log"
    np.testing.assert_allclose(lines[0].get_ydata(), band_energy(clean, "hw").mean(axis=0))
    np.testing.assert_allclose(lines[2].get_ydata(), lines[0].get_ydata(), rtol=1e-9)  # a shift keeps E(f)
    fig.savefig(tmp_path / "energy.png")
    assert (tmp_path / "energy.png").stat().st_size > 5_000


def test_band_energy_differences_draw_one_line_per_perturbation() -> None:
    pytest.importorskip("matplotlib")
    clean, perturbed = _states()
    fig = plots.band_energy_differences(clean, perturbed, layout="hw")
    ax = fig.axes[0]
    lines = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert [line.get_label() for line in lines] == ["brightness", "shift", "noise"]
    assert ax.get_yscale() == "asinh"
    expected = difference_spectrum(clean, perturbed["brightness"], "hw", average=True)
    np.testing.assert_allclose(lines[0].get_ydata(), expected)
    np.testing.assert_allclose(lines[1].get_ydata(), 0.0, atol=1e-3 * np.abs(expected).max())
    unchanged = plots.band_energy_differences(clean, {"copy": clean.copy()}, layout="hw")
    (line,) = [line for line in unchanged.axes[0].get_lines() if line.get_label() == "copy"]
    assert not np.any(line.get_ydata())


def test_spectrum_plots_refuse_bad_input() -> None:
    pytest.importorskip("matplotlib")
    clean, perturbed = _states()
    for plot in (plots.fourier_spectra, plots.band_energy_curves, plots.band_energy_differences):
        with pytest.raises(InvalidArgument, match="empty mapping"):
            plot(clean, {}, layout="hw")
        with pytest.raises(InvalidArgument, match=r"`perturbed\['crop'\]` must have the shape of `clean`"):
            plot(clean, {"crop": clean[:, 1:]}, layout="hw")
        with pytest.raises(InvalidType, match="must be a mapping"):
            plot(clean, [perturbed["shift"]], layout="hw")  # type: ignore[arg-type]
