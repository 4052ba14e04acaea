"""training: QA synthesis, SFT and GRPO (see the training issues)."""
