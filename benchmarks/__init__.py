"""Benchmarks that print side-by-side ratios against the tools users would otherwise use."""
