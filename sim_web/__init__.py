"""sim_web: the simulated web (tools, backends, executor, the WebResearch-v0 env, HTTP server)."""
