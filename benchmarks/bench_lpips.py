"""LPIPS over a batch of 64 frame pairs, against 64 calls of one pair each (limit 0.3); SSIM timed the same way.

The frames are 84x84 grayscale (the usual Atari preprocessing), passed as one (64, 84, 84) batch with
``layout="hw"`` or one (84, 84) frame per call. The trunk is AlexNet with a random backbone (no ImageNet file
is needed; the ImageNet weights cost the same to run). Both arms run on the same machine in interleaved rounds;
the printed ratio is the batched time per pair over the one-pair time per pair. SSIM has no limit: it calls
scikit-image once per frame either way, so the ratio shows the per-call overhead only.

Run: python benchmarks/bench_lpips.py
"""

from __future__ import annotations

import sys

import numpy as np
import torch
from _timing import report

from rlwrappers.metrics.perceptual import LPIPS, ssim

PAIRS = 64


def main() -> bool:
    rng = np.random.default_rng(0)
    clean = rng.integers(0, 256, (PAIRS, 84, 84), dtype=np.uint8)
    perturbed = np.clip(clean + rng.normal(0.0, 8.0, clean.shape), 0, 255).astype(np.uint8)
    metric = LPIPS(random_backbone=True, seed=0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {metric!r}")

    def lpips_singles() -> int:
        for c, p in zip(clean, perturbed, strict=True):
            metric.distance(c, p)
        return PAIRS

    def lpips_batch() -> int:
        metric.distance(clean, perturbed, layout="hw")
        return PAIRS

    def ssim_singles() -> int:
        for c, p in zip(clean, perturbed, strict=True):
            ssim(c, p)
        return PAIRS

    def ssim_batch() -> int:
        ssim(clean, perturbed, layout="hw")
        return PAIRS

    ok = report(
        f"LPIPS (AlexNet) per 84x84 grayscale frame pair: {PAIRS} one-pair calls, then one call of {PAIRS} pairs",
        {"LPIPS, one pair per call": lpips_singles, f"LPIPS, {PAIRS} pairs in one call": lpips_batch},
        {f"LPIPS, {PAIRS} pairs in one call": 0.3},
        rounds=11,
    )
    report(
        f"SSIM per 84x84 grayscale frame pair: {PAIRS} one-pair calls, then one call of {PAIRS} pairs",
        {"SSIM, one pair per call": ssim_singles, f"SSIM, {PAIRS} pairs in one call": ssim_batch},
        {},
        rounds=11,
    )
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
