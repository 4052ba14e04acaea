"""Sim-to-real: one policy on the simulated and the real web side by side (run, wire-format checks, report, CLI)."""
