"""sim_web: the simulated web (tools, backends, executor, the ``WebResearch-v0`` env, HTTP server).

Importing it registers ``WebResearch-v0`` with Gymnasium, so both
``import sim_web; gym.make("WebResearch-v0")`` and ``gym.make("sim_web:WebResearch-v0")`` work.
Heavy parts (the index, torch) load only when an env is made. Importing it also installs the log scrubber
(:func:`simweb_core.secret.install_log_scrubber`).
"""

from importlib import metadata as _metadata

from gymnasium.envs.registration import register, registry

from simweb_core.secret import install_log_scrubber

install_log_scrubber()  # the second line of defence: no credential in this package's or httpx's log records

ENV_IDS = ("WebResearch-v0",)

if "WebResearch-v0" not in registry:
    # Truncation is the env's own (EnvConfig.max_turns, max_obs_chars), so that changing the
    # config changes the limit; no TimeLimit wrapper is added on top.
    register(id="WebResearch-v0", entry_point="sim_web.env:WebResearchEnv")

__all__ = ["ENV_IDS"]
__version__ = _metadata.version("sim-web")  # the one version: pyproject.toml
