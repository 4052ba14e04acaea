"""The PythonInterpreter tool: agent code in a sandboxed child process (:func:`run_python`)."""

from sim_web.tools.python.sandbox import PythonConfig, run_python

__all__ = ["PythonConfig", "run_python"]
