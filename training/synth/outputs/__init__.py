"""Stage 4, outputs: what a run leaves behind.

A verified question as a task record (:mod:`.records`), the set written as JSONL, a Hugging Face dataset, DuckDB and
a dataset card (:mod:`.write`), the run's report (:mod:`.report`), and a reader's audit of the set (:mod:`.audit`,
its figures in :mod:`.audit_summary`; ``python -m training.synth.outputs.audit``). Nothing is made or dropped here.
Imports any stage below, never the top level (``pipeline``, ``config``, ``cli``).
"""
