"""Policies: the OpenAI-compatible endpoint, a local transformers model, and the oracle."""

from agents.policies.base import FunctionPolicy, Generation, Policy, as_policy

__all__ = ["FunctionPolicy", "Generation", "Policy", "as_policy"]
