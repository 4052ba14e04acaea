#!/usr/bin/env bash
# Transfer 3 of the GPU kit (carry .gpukit/t3): join the SmolLM2 GGUF (half 1 from t2), check it against its sha256,
# convert it once to a Hugging Face folder, then three steps of the single-gpu recipe on the real SmolLM2-135M.
STAGE=t3
. deploy/gpu-kit/common.sh
note start "$(date -u +%FT%TZ)"
verify t3 || exit 3
install_t1 || exit 3
mkdir -p "$NODE/gguf" && cp -n "$KIT"/t3/*.part* "$NODE/gguf/"
[ -f "$NODE/gguf/manifest.json" ] || { note join "half 1 missing: the node was reset, run t2.sh first"; exit 3; }
MODELS="$SIM_WEB_HOME/models"
if [ ! -f "$MODELS/SmolLM2-135M-Instruct/config.json" ]; then
  note convert start
  "$PY" -m sim_web.bundle.parts --dir "$NODE/gguf" --no-extract >>"$OUT/t3.log" 2>&1 ||
    { note join "failed (see t3.log)"; exit 3; }
  "$PY" -c 'import sys; from agents.models import smollm2_path; smollm2_path(gguf=sys.argv[1])' \
    "$(ls "$NODE"/gguf/*.gguf)" >>"$OUT/t3.log" 2>&1 || { note convert "failed (see t3.log)"; exit 3; }
  note convert done
fi
bench smollm2 --model smollm2
note end ok
