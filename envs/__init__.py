"""Environment mods, installed as ``rlwrappers.envs``.

Intervenable Toybox games and a cooperative multi-agent env, registered in Gymnasium under the
``rlwrappers`` namespace as they land.
"""
