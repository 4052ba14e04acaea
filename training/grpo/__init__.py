"""GRPO for the research agent on TRL: leave-one-out advantage, truncated negatives out of the loss, rollouts
through our own ReAct loop over :class:`sim_web.env.WebResearchEnv` (the wire format of SFT and ``sim-web eval``)."""
