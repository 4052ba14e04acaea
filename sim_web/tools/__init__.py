"""The Tongyi tools: :class:`ToolMethods` (the one definition behind every schema), the system prompt, the
:class:`Toolbox` that runs calls through the executor, and the sandboxed PythonInterpreter (``tools.python``)."""

from sim_web.tools.prompt import PROMPT_STYLES, PYTHON_DESCRIPTION, system_prompt
from sim_web.tools.toolbox import MULTI_RESPONSE_JOINER, Toolbox, ToolMethods, tool_schema

__all__ = [
    "MULTI_RESPONSE_JOINER",
    "PROMPT_STYLES",
    "PYTHON_DESCRIPTION",
    "ToolMethods",
    "Toolbox",
    "system_prompt",
    "tool_schema",
]
