"""agents: the ReAct loop, policies and evaluation (see the agents issue)."""
