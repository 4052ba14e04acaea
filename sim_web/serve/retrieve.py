"""Many queries in one request: Search-R1's ``POST /retrieve``, and the bulk form of ``POST /backend/search``.

Search-R1 (github.com/PeterGriffinJin/Search-R1: the server ``search_r1/search/retrieval_server.py``, the client
``search_r1/llm_agent/generation.py``) and verl's port (``verl/tools/utils/search_r1_like_utils.py``, verl <= 0.7.1)
send one request per turn for the rollouts of a whole batch, ``{"queries": [...], "topk": k, "return_scores": true}``,
and read ``"result"``: per query, a list of ``{"document": {"id": ..., "contents": ...}, "score": ...}`` (with
``return_scores`` false, the document dicts alone). Two of its ports send one query per request instead:

* SkyRL-gym 0.4.0 (``skyrl_gym/tools/search.py``) posts JSON ``{"query": "...", "topk": k, "return_scores": true}``
  and reads ``"result"`` as Search-R1's, a list per query: it gets ``{"result": [[...]]}``;
* GEM 0.1.0 (``gem/tools/search_tool.py``) posts the same fields as MessagePack, without a ``Content-Type``, and
  reads ``"result"`` of a MessagePack reply as one flat list of documents. A MessagePack request
  (:func:`~sim_web.serve.msgpack_wire.looks_packed`) gets a MessagePack reply; with a single ``query`` its
  ``result`` is that query's list, with ``queries`` one list per query as in JSON. ``contents`` follows their corpus (wiki-18): the title in double quotes on the first line,
then the passage; their client takes the first line as the title and the rest as the text. Served here, so that
such a fleet trains on this corpus with its client unchanged.

The documents are the index's ~100-word passages ranked by the served retrieval mode (not the one-result-per-page
list of the ``search`` tool), ``id`` the passage id. As their server does, a missing, ``null`` or ``0`` ``topk``
means the default (:data:`DEFAULT_TOPK`) and unknown fields are ignored. A blank query gets an empty list and a
query over :data:`~sim_web.serve.fast.QUERY_MAX` characters is searched on its first ``QUERY_MAX``, so that one
runaway generation does not fail the request of a whole training batch.

``POST /backend/search`` with ``{"queries": [...], "k": k}`` (instead of ``"query"``) returns ``{"results": [...]}``
with one list of structured results per query: the executor's search, as for one query, with the same checks.

Both take up to :data:`MAX_QUERIES` queries; they run on the tool pool, never on the event loop, however local the
index (a batch is many searches long, and ``/health`` must stay answered).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Annotated, Any

from fastapi import FastAPI, Request, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import to_json

from sim_web.protocol.arguments import valid_unicode
from sim_web.serve.guards import K_MAX, QUERY_MAX, ToolPool
from sim_web.serve.msgpack_wire import MEDIA_TYPES, MsgpackError, looks_packed, packb, unpack_retrieve

MAX_QUERIES = 512  #: queries in one ``/retrieve`` or bulk ``/backend/search`` request
DEFAULT_TOPK = 3  #: ``/retrieve`` documents per query when ``topk`` is missing, null or 0 (Search-R1's default)
_Query = Annotated[str, Field(min_length=1, max_length=QUERY_MAX)]


def _valid_unicode_items(value: Any) -> Any:
    """Lone surrogates in a list of strings replaced, as in the tools' arguments (anything else left to the model)."""
    return [valid_unicode(v) if isinstance(v, str) else v for v in value] if isinstance(value, list) else value


class RetrieveRequest(BaseModel):
    """Search-R1's retrieval request, or SkyRL-gym's and GEM's with one ``query`` (unknown fields ignored, as by
    Search-R1's server)."""

    model_config = ConfigDict(extra="ignore")
    queries: list[str] | None = Field(default=None, max_length=MAX_QUERIES, description='e.g. ["capital of France"]')
    query: str | None = Field(default=None, description="one query instead of 'queries' (SkyRL-gym, GEM)")
    topk: int | None = Field(default=None, ge=0, le=K_MAX, description=f"missing, null or 0: {DEFAULT_TOPK}")
    return_scores: bool = False

    @field_validator("queries", "query", mode="before")
    @classmethod
    def _valid_unicode(cls, value: Any) -> Any:
        return valid_unicode(value) if isinstance(value, str) else _valid_unicode_items(value)

    @model_validator(mode="after")
    def _one_form(self) -> RetrieveRequest:
        if (self.query is None) == (self.queries is None):
            raise ValueError(
                "'queries' missing or sent with 'query': send 'queries' (a list of strings, Search-R1) "
                "or 'query' (one string, SkyRL-gym and GEM), not both"
            )
        return self


class SearchRequest(BaseModel):
    """A backend search: one ``query`` (``{"results": [...]}``) or many ``queries`` (one list per query)."""

    model_config = ConfigDict(extra="forbid")
    query: str | None = Field(default=None, min_length=1, max_length=QUERY_MAX)
    queries: list[_Query] | None = Field(default=None, max_length=MAX_QUERIES)
    k: int = Field(default=10, ge=1, le=K_MAX)

    @field_validator("query", "queries", mode="before")
    @classmethod
    def _valid_unicode(cls, value: Any) -> Any:  # lone surrogates: replaced, as in the tools' arguments
        return valid_unicode(value) if isinstance(value, str) else _valid_unicode_items(value)

    @model_validator(mode="after")
    def _one_form(self) -> SearchRequest:
        if (self.query is None) == (self.queries is None):
            raise ValueError("send either 'query' (a string) or 'queries' (a list of strings), not both or neither")
        return self


def retrieve_args(body: Any) -> tuple[list[str], int, bool] | None:
    """``(queries, topk, return_scores)`` of a ``RetrieveRequest`` body that the model would accept as is, else ``None``.

    Args:
        body: The parsed JSON body.
    """
    if type(body) is not dict:
        return None
    queries, topk, scores = body.get("queries"), body.get("topk"), body.get("return_scores", False)
    one = body.get("query")
    if type(one) is str and queries is None:
        queries = [one]
    elif one is not None:
        return None
    if type(queries) is not list or len(queries) > MAX_QUERIES or any(type(q) is not str for q in queries):
        return None
    if (topk is not None and (type(topk) is not int or not 0 <= topk <= K_MAX)) or type(scores) is not bool:
        return None
    return [valid_unicode(q) for q in queries], topk or DEFAULT_TOPK, scores


def bulk_args(body: Any) -> tuple[list[str], int] | None:
    """``(queries, k)`` of a bulk ``SearchRequest`` body that the model would accept as is, else ``None``.

    Args:
        body: The parsed JSON body.
    """
    if type(body) is not dict or not body.keys() <= {"queries", "k"}:
        return None
    queries, k = body.get("queries"), body.get("k", 10)
    if type(queries) is not list or len(queries) > MAX_QUERIES or type(k) is not int or not 1 <= k <= K_MAX:
        return None
    if any(type(q) is not str for q in queries):
        return None
    queries = [valid_unicode(q) for q in queries]
    return (queries, k) if all(1 <= len(q) <= QUERY_MAX for q in queries) else None


def bulk_search(search: Callable[[str, int], list[Any]], queries: list[str], k: int) -> bytes:
    """The bulk ``/backend/search`` answer: ``{"results": [[result, ...] per query]}`` as JSON bytes.

    Args:
        search: The executor's search (``query, k -> results``).
        queries: The queries, checked.
        k: Results per query.

    Raises:
        ToolUnavailableError: Every backend failed on one of the queries (the whole request is answered 503).
    """
    return to_json({"results": [[asdict(r) for r in search(q, k)] for q in queries]})


@dataclass(frozen=True)
class Retriever:
    """Search-R1's retrieval over a local index: ranked passages with their scores.

    Attributes:
        index: The opened :class:`~wiki_index.search.index.WikiIndex`.
        mode: Its retrieval mode (``bm25``, ``dense`` or ``hybrid``).
    """

    index: Any
    mode: str = "bm25"

    @classmethod
    def serving(cls, backends: list[Any], fallback: Any, mode: str) -> Retriever:
        """The index the executor's sim backend searches (shared, warmed up), else ``fallback``.

        Args:
            backends: The executor's backends (a sim backend, or the real backends' Wikipedia fallback, holds the index).
            fallback: The index to search when no backend holds one (e.g. the real web without its fallback).
            mode: The served retrieval mode.
        """
        for backend in backends:
            index = getattr(getattr(backend, "sim", backend), "index", None)
            if index is not None and hasattr(index, "search"):
                return cls(index, mode)
        return cls(fallback, mode)

    def documents(self, query: str, topk: int, scores: bool) -> list[dict[str, Any]]:
        """One query's Search-R1 result list: ``{"document": {"id", "contents"}, "score"}``, or the bare documents."""
        query = query[:QUERY_MAX]
        hits = self.index.search(query, topk, self.mode) if query.strip() else []
        docs = [{"id": p.docid, "contents": f'"{p.title}"\n{p.text}'} for _, p in hits]
        return [{"document": d, "score": float(h.score)} for d, (h, _) in zip(docs, hits)] if scores else docs

    def retrieve(self, queries: list[str], topk: int, scores: bool) -> bytes:
        """The ``/retrieve`` answer, ``{"result": [list per query]}``, as JSON bytes.

        Args:
            queries: The queries (any length; see the module docstring).
            topk: Documents per query (1 to ``K_MAX``).
            scores: Pair each document with its score (Search-R1's ``return_scores``).
        """
        return to_json({"result": [self.documents(q, topk, scores) for q in queries]})

    def retrieve_packed(self, queries: list[str], topk: int, scores: bool, flat: bool) -> bytes:
        """The ``/retrieve`` answer as MessagePack: ``result`` one list per query, or with ``flat`` (one ``query``,
        GEM's request) that query's list."""
        result = [self.documents(q, topk, scores) for q in queries]
        return packb({"result": result[0] if flat else result})


def add_retrieve_route(
    app: FastAPI, retriever: Retriever, pool: ToolPool, authorized: Callable[[Request], None]
) -> None:
    """``POST /retrieve`` behind ``authorized``, run on ``pool``; a JSON answer's bytes are the fast route's.

    The body is read here rather than by FastAPI, since it may be JSON or MessagePack; it is checked against
    :class:`RetrieveRequest` all the same, and its errors are FastAPI's 422s.

    Args:
        app: The FastAPI app.
        retriever: What searches the index.
        pool: The tool threads.
        authorized: The bearer-token dependency of the other routes.
    """
    from fastapi import Depends

    from sim_web.serve.pool import client_key, decode_body

    schema = {"schema": RetrieveRequest.model_json_schema()}
    body_doc = {"requestBody": {"required": True, "content": {"application/json": schema, MEDIA_TYPES[0]: schema}}}

    @app.post("/retrieve", dependencies=[Depends(authorized)], openapi_extra=body_doc)
    async def retrieve(request: Request) -> Response:
        """Search-R1's ``/retrieve``: per query, the ``topk`` best passages (``"title"\\ntext``), with scores on request.

        Also one ``query`` instead of ``queries`` (SkyRL-gym), and MessagePack in and out (GEM).
        """
        raw, client = await request.body(), client_key(request.scope)
        packed = looks_packed(request.headers.get("content-type", ""), raw)
        req = await decode_body(pool.run, functools.partial(parse_retrieve, packed=packed), raw, client)
        queries = req.queries if req.queries is not None else [req.query or ""]
        topk = req.topk or DEFAULT_TOPK
        if packed:
            flat = req.queries is None
            content = await pool.run(retriever.retrieve_packed, queries, topk, req.return_scores, flat, client=client)
            return Response(content, media_type=MEDIA_TYPES[0])
        content = await pool.run(retriever.retrieve, queries, topk, req.return_scores, client=client)
        return Response(content, media_type="application/json")


def parse_retrieve(raw: bytes, packed: bool) -> RetrieveRequest:
    """A ``/retrieve`` body (JSON, or MessagePack when ``packed``) as a checked :class:`RetrieveRequest` (on the event
    loop for a small body, on the tool threads for a large one: :func:`~sim_web.serve.pool.decode_body`).

    Raises:
        RequestValidationError: Not JSON (or MessagePack), or not a valid request (answered 422 without echo).
    """
    import json

    from fastapi.exceptions import RequestValidationError
    from pydantic import ValidationError

    try:
        data = unpack_retrieve(raw, MAX_QUERIES) if packed else json.loads(raw)
    except (MsgpackError, ValueError, RecursionError) as e:
        kind = "MessagePack" if packed else "JSON"
        reason = str(e) if isinstance(e, MsgpackError) else f"{kind} decode error"
        raise RequestValidationError([{"type": "json_invalid", "loc": ("body", 0), "msg": reason}]) from None
    try:
        return RetrieveRequest.model_validate(data)
    except ValidationError as e:
        errors = [{**err, "loc": ("body", *err["loc"])} for err in e.errors(include_input=False, include_url=False)]
        raise RequestValidationError(errors) from None
