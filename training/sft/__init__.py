"""SFT cold start: rejection sampling of harness episodes (collect), a tokenised dataset (dataset), SFTTrainer (train)."""
