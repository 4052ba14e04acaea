"""sim-web's search and visit as a verifiers Toolset: an MCP server over the toolbox, its index opened once.

verifiers launches it as ``python -m sim_web_tasks.toolset`` (one server per environment worker, shared by its
rollouts) and passes :class:`SimWebToolsConfig` in ``$VF_CONFIG``. With ``url`` set, nothing is launched: the
rollouts use a running ``sim-web serve``'s ``POST /mcp`` instead (``http://user:TOKEN@host:port/mcp`` when it wants
a token).
"""

from __future__ import annotations

import asyncio

import verifiers.v1 as vf

#: The tools offered (the PythonInterpreter stays off: the taskset runs no model-written code).
TOOLS = ("search", "visit")


class SimWebToolsConfig(vf.SharedToolsetConfig):
    """Where the tools come from: this package's MCP server over an index, or ``url`` (a running server)."""

    index_dir: str | None = None
    """The sim-web index the tools browse (default: the sample index under $SIM_WEB_HOME)."""
    results: int = 10
    """Results per search query."""


class SimWebToolset(vf.Toolset[SimWebToolsConfig]):
    """Tongyi's ``search`` and ``visit`` over the simulated web (the model sees ``web_search`` / ``web_visit``)."""

    TOOL_PREFIX = "web"

    async def setup(self) -> None:
        """Open the index and build the toolbox once per server process (the expensive part)."""
        from sim_web.env import EnvConfig, make_toolbox

        config = EnvConfig(index_dir=self.config.index_dir, tools=TOOLS, search_results=self.config.results)
        self.toolbox = await asyncio.to_thread(make_toolbox, config)

    @vf.tool
    async def search(self, query: list[str]) -> str:
        """Search the web. Accepts several queries at once; returns the top results (title, URL, snippet) of each.

        Args:
            query: The search queries.
        """
        return await asyncio.to_thread(self.toolbox.search, query)

    @vf.tool
    async def visit(self, url: list[str], goal: str) -> str:
        """Visit web pages and return the parts of their content that serve the goal.

        Args:
            url: The URLs to visit (from search results).
            goal: What information to look for on the pages.
        """
        return await asyncio.to_thread(self.toolbox.visit, url, goal)


if __name__ == "__main__":
    SimWebToolset.run()
