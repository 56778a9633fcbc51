"""What rlwrappers logs is the same whichever BLAS kernel the CPU picks (docs/seeding.md, "Across machines").

OpenBLAS chooses its kernel by CPU, and ``OPENBLAS_CORETYPE`` overrides the choice; its float32 kernels sum a
dot product in different orders. The same evaluation (six kinds of shift, parameter noise among them) runs in
a subprocess under each of three kernels, and every log it writes is compared as
``tests/test_recorded_before.py`` compares them: the same bits, times and versions aside. Each subprocess
also reports a float32 dot, to show that its kernel was the one asked for.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_logs import assert_same_logs

#: OpenBLAS kernels, by the CPU feature each needs (``/proc/cpuinfo`` flags).
KERNELS = {"Prescott": "sse3", "Haswell": "avx2", "SkylakeX": "avx512f"}

SCRIPT = """
import json, sys
import numpy as np
import rlwrappers as rw
from rlwrappers.studies import Execution

shifts = {
    "param noise": "param_noise(std=0.1)",
    "obs noise": "obs_noise(std=0.2)",
    "action noise": "action_noise(p=0.2)",
    "init noise": "init_noise(std=0.05)",
    "randomized": "dynamics_shift(values={'length': uniform(0.25, 1.0), 'masspole': uniform(0.05, 0.2)})",
    "fgsm": "fgsm(eps=0.05)",
}
execution = Execution(workers=1, progress=False)
rw.evaluate("ppo-CartPole-v1", "CartPole-v1", shifts, episodes=2, seeds=1, out=sys.argv[1], execution=execution)
x = np.random.default_rng(0).standard_normal(100_003, dtype=np.float32)
print(json.dumps(float(np.dot(x, x))))
"""


def _kernels() -> list[str]:
    """The kernels this CPU can run (an x86-64 one: the others name their kernels otherwise)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return []
    flags: set[str] = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    flags.add("sse3")  # every x86-64 CPU that runs numpy has it (cpuinfo calls it pni)
    return [kernel for kernel, needs in KERNELS.items() if needs in flags]


@pytest.mark.slow
def test_an_evaluation_logs_the_same_bits_under_each_openblas_kernel(tmp_path: Path) -> None:
    kernels = _kernels()
    if len(kernels) < 2:
        pytest.skip(f"needs two OpenBLAS kernels this CPU runs, of {list(KERNELS)}; it runs {kernels}")
    dots = {}
    for kernel in kernels:
        env = {**os.environ, "OPENBLAS_CORETYPE": kernel}
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(tmp_path / kernel)], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
        dots[kernel] = json.loads(done.stdout.strip().splitlines()[-1])
    # The kernels differ where BLAS is used: the same float32 dot gives other bits under each.
    assert len(set(dots.values())) == len(kernels), dots
    first, *others = kernels
    for kernel in others:
        assert_same_logs(tmp_path / kernel / "logs", tmp_path / first / "logs")
