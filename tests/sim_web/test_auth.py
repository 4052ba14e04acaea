"""The server's token as HTTP Basic auth beside Bearer (issue 58): any user name, the token as the password.

The released clients that take a URL only (SkyRL-gym, GEM, verl's helper, OpenEnv's, verifiers' MCP toolsets) send
a URL's user info (``http://user:TOKEN@host``) as ``Authorization: Basic``. Every guarded route and the ``/ws``
handshake accept it; a wrong password, a token in the user-name slot or a malformed header is refused, and no
refusal (nor the log) shows what was sent.
"""

from __future__ import annotations

import base64
import logging

import httpx
import pytest
from live_server import running
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from sim_web.serve.guards import token_matches
from sim_web.serve.http import create_app

TOKEN = "basic-auth-token-for-tests"


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize(
    ("header", "accepted"),
    [
        (f"Bearer {TOKEN}", True),
        (f"bearer  {TOKEN} ", True),
        (_basic("anyone", TOKEN), True),
        (_basic("", TOKEN), True),
        ("basic " + base64.b64encode(f"u:{TOKEN}".encode()).decode(), True),
        (_basic("anyone", "wrong"), False),
        (_basic(TOKEN, ""), False),  # the token as the user name is not the password
        ("Basic " + base64.b64encode(TOKEN.encode()).decode(), False),  # no colon: no password
        ("Basic not*base64", False),
        ("Basic " + base64.b64encode(b"u:\xff\xfe").decode(), False),  # not UTF-8
        (TOKEN, False),
        (f"Token {TOKEN}", False),
        ("", False),
    ],
)
def test_token_matches_bearer_and_basic(header, accepted):
    assert token_matches(TOKEN, header) is accepted


ROUTES = [
    ("get", "/tools", None),
    ("post", "/tools/search", {"arguments": {"query": ["Danube"]}}),  # the fast path
    ("post", "/backend/search", {"query": "Danube"}),
    ("post", "/backend/visit", {"url": "https://en.wikipedia.org/wiki/Danube"}),
    ("post", "/retrieve", {"queries": ["Danube"], "topk": 2}),
    ("post", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    ("post", "/score", {"prediction": "Danube", "answer": "Danube"}),
]


@pytest.fixture(scope="module")
def server(sample_index):
    with running(create_app(str(sample_index), token=TOKEN)) as url:
        yield url


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_every_guarded_route_takes_the_token_from_the_url(server, method, path, body, caplog):
    host = server.removeprefix("http://")
    kwargs = {"json": body} if body else {}
    with caplog.at_level(logging.DEBUG):
        ok = httpx.request(method, f"http://trainer:{TOKEN}@{host}{path}", timeout=60, **kwargs)
        assert ok.status_code == 200, ok.text
        for url in (f"http://trainer:n0t-the-secret@{host}{path}", f"http://{TOKEN}@{host}{path}", server + path):
            refused = httpx.request(method, url, timeout=60, **kwargs)
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer", url
            assert (
                TOKEN not in refused.text
                and "n0t-the-secret" not in refused.text
                and "Basic" in refused.json()["detail"]
            )
    assert TOKEN not in caplog.text


def test_the_socket_handshake_takes_the_token_from_the_url(server):
    ws = server.replace("http://", "ws://")
    with connect(ws.replace("ws://", f"ws://trainer:{TOKEN}@") + "/ws") as socket:
        socket.send('{"type": "reset", "data": {"seed": 0}}')
        assert '"observation"' in socket.recv(timeout=60)
    for url in (ws.replace("ws://", "ws://trainer:n0t-the-secret@") + "/ws", ws + "/ws"):
        with pytest.raises(InvalidStatus) as refused:
            connect(url)
        assert refused.value.response.status_code == 403 and TOKEN not in refused.value.response.body.decode()
