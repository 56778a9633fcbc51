"""Pure array math behind the perturbations: noise, image layouts, natural corruptions, gradient attacks.

Every function here is a pure function of its inputs, its parameters and the generator it is given, over
NumPy arrays (torch tensors for the attacks); nothing here knows Gymnasium, logs or agents. The wrappers of
:mod:`rlwrappers.wrappers` bind these functions to an env's spaces; the metrics reuse the image helpers.

- :mod:`~rlwrappers.functional.noise`: Gaussian and uniform noise, random and sticky actions, batched.
- :mod:`~rlwrappers.functional.images`: image layouts (``hw``, ``hwc``, ``chw``) and frame views.
- :mod:`~rlwrappers.functional.corruptions`: seed 004's six natural corruptions of uint8 frames.
- :mod:`~rlwrappers.functional.attacks`: FGSM, PGD and Carlini-Wagner on a differentiable score map.
"""
