"""Environment mods (installed as ``rlwrappers.envs``): intervenable Toybox games and a cooperative
multi-agent env, registered in Gymnasium under the ``rlwrappers`` namespace as they land."""
