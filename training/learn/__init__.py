"""``sim-web learn``: the curriculum recipe that shows learning on a CPU (base model -> SFT -> GRPO, held-out evals)."""
