"""Offline bundles for air-gapped machines (``sim-web bundle``): wheels resolved for the target's Python and platform,
this package, the index and task sets, the model and one install script, cut into parts with sha256 checks.

:mod:`~sim_web.bundle.wheels` resolves and downloads for the target, :mod:`~sim_web.bundle.build` assembles the bundle,
:mod:`~sim_web.bundle.parts` splits and joins (standard library only: it ships as ``join_bundle.py``).
"""

from sim_web.bundle.parts import PartsError, check_parts, join_parts, split_file
from sim_web.bundle.wheels import BundleError, Target

__all__ = ["BundleError", "PartsError", "Target", "check_parts", "join_parts", "split_file"]
