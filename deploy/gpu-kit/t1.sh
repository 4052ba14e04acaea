#!/usr/bin/env bash
# Transfer 1 of the GPU kit (carry .gpukit/t1): install the wheels, the index and the tokenizer, then the throughput
# half on a random-init Qwen2-0.5B shape (no weights travel). Rerun on a warm node: skips what is done.
STAGE=t1
. deploy/gpu-kit/common.sh
note start "$(date -u +%FT%TZ)"
node_facts
install_t1 || exit 3
bench qwen2-0.5b --model random:qwen2-0.5b --tokenizer "$NODE/tokenizer"
note end ok
