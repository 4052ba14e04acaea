#!/usr/bin/env bash
# Transfer 2 of the GPU kit (carry .gpukit/t2): keep the first half of the SmolLM2 GGUF, then the throughput half on
# the largest random-init shape, Qwen2-1.5B. Needs t1 installed on this node (else it keeps the half and says so).
STAGE=t2
. deploy/gpu-kit/common.sh
note start "$(date -u +%FT%TZ)"
verify t2 || exit 3
mkdir -p "$NODE/gguf" && cp -n "$KIT"/t2/*.part* "$NODE/gguf/" && cp "$KIT/t2/gguf-manifest.json" "$NODE/gguf/manifest.json"
note keep-gguf-half-1 done
install_t1 || exit 3
bench qwen2-1.5b --model random:qwen2-1.5b --tokenizer "$NODE/tokenizer"
note end ok
