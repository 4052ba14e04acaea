# Sourced by t1.sh, t2.sh, t3.sh on the GPU node, from the repository root (the device tool runs commands there).
# The code runs from the working tree (first on PYTHONPATH); the kit's wheels, sim-web's own for its metadata
# included, go to $NODE/site. What a transfer brings is checked (SHA256SUMS) and installed once under .gpukit-node/
# (ignored by git, never carried), so a rerun on a warm node skips what is done; a node that was reset has lost it:
# start again at t1.
# Every step appends a line to $OUT/$STAGE.json before it starts and when it ends, and each benchmark tees its log
# and writes its numbers under $OUT as it goes, so whatever happens later the numbers so far come back.
set -u
KIT=.gpukit
NODE=.gpukit-node
OUT=${OUT:-$NODE/out}
PY=${PY:-python3}
LIMIT=${GPU_KIT_LIMIT:-150}   # seconds per benchmark (each writes its numbers before the next starts)
mkdir -p "$OUT" "$NODE"
export PYTHONPATH="$PWD:$PWD/$NODE/site" SIM_WEB_HOME="$PWD/$NODE/home" SIM_WEB_BM25=lite PYTHONUNBUFFERED=1 \
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

note() {  # note STEP STATUS: one JSON line in $OUT/$STAGE.json
  printf '{"stage": "%s", "step": "%s", "status": "%s", "unix": %s}\n' "$STAGE" "$1" "$2" "$(date +%s)" \
    >>"$OUT/$STAGE.json"
}

verify() {  # verify tN: every file the transfer carried, against its SHA256SUMS, and no file the list does not name
  [ -f "$KIT/$1/SHA256SUMS" ] || { note "verify-$1" "missing: carry $KIT/$1"; return 1; }
  (cd "$KIT/$1" && sha256sum -c --quiet SHA256SUMS) || { note "verify-$1" "sha256 mismatch"; return 1; }
  local extra  # anything but a folder (a file, a link) that SHA256SUMS does not list: never installed by a glob
  extra=$(cd "$KIT/$1" && find . ! -type d ! -path ./SHA256SUMS -printf '%P\n' | LC_ALL=C sort \
    | LC_ALL=C comm -23 - <(sed 's/^[0-9a-f]\{64\} [ *]//' SHA256SUMS | LC_ALL=C sort) | wc -l)
  [ "$extra" -eq 0 ] || { note "verify-$1" "$extra files not in SHA256SUMS: build the kit again"; return 1; }
}

install_t1() {  # wheels into $NODE/site, the index into $SIM_WEB_HOME/indexes, the tokenizer into $NODE/tokenizer
  [ -f "$NODE/t1.done" ] && return 0
  [ -d "$KIT/t1" ] || { note install-t1 "not here: the node was reset, run t1.sh (carry .gpukit/t1) first"; return 1; }
  note install-t1 start
  verify t1 || return 1
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$NODE/site" \
    "$KIT"/t1/wheels/*.whl || { note install-t1 "pip failed"; return 1; }
  mkdir -p "$SIM_WEB_HOME/indexes" && tar -xzf "$KIT/t1/index.tar.gz" -C "$SIM_WEB_HOME/indexes" || return 1
  rm -rf "$NODE/tokenizer" && cp -r "$KIT/t1/tokenizer" "$NODE/tokenizer"
  touch "$NODE/t1.done"
  note install-t1 done
}

bench() {  # bench NAME ARGS...: one GPU check run, skipped when an earlier call finished it
  local name=$1
  shift
  [ -f "$NODE/$name.done" ] && { note "$name" "done earlier"; return 0; }
  note "$name" start
  timeout "$LIMIT" "$PY" -m benchmarks.bench_gpu --passages 0 --bm25 lite --out "$NODE/runs/$name" \
    --json "$OUT/$name.json" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  [ -f "$OUT/$name.json" ] || cp "$NODE/runs/$name/metrics.jsonl" "$OUT/$name.metrics.jsonl" 2>/dev/null
  note "$name" "rc=$rc"
  # done only once it measured something (a CPU rehearsal says "no CUDA" and exits 0 without steps)
  [ $rc -eq 0 ] && grep -q '"steps"' "$OUT/$name.json" 2>/dev/null && touch "$NODE/$name.done"
  return 0
}

node_facts() {  # the GPU, the image's Python packages the check uses, free disk: once per stage
  { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
    "$PY" -c 'import sys,torch,transformers;print(sys.version.split()[0],torch.__version__,transformers.__version__)'
    df -h . | tail -1; } >"$OUT/$STAGE.facts.txt" 2>&1
}
