"""The PythonInterpreter tool: agent code in a bubblewrap sandbox (:func:`run_python`)."""

from sim_web.tools.python.sandbox import PythonConfig, run_python, sandbox_problem

__all__ = ["PythonConfig", "run_python", "sandbox_problem"]
