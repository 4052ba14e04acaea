"""``/retrieve``'s other request forms: one ``query`` (SkyRL-gym) and MessagePack in and out (GEM), with Search-R1's
own form unchanged; and the MessagePack reader's limits (issue 35, part 2). Needs no client package."""

from __future__ import annotations

import json
import math
import uuid

import pytest
from fastapi.testclient import TestClient

from sim_web.serve.http import create_app
from sim_web.serve.msgpack_wire import MAX_DEPTH, MsgpackError, looks_packed, packb, unpackb


@pytest.fixture(scope="module")
def both(sample_index):
    """The same server twice: FastAPI only, and with the fast routes in front."""
    return [TestClient(create_app(str(sample_index), fast_routes=f), raise_server_exceptions=False) for f in (0, 1)]


def test_one_query_gets_search_r1s_nested_reply_on_both_paths(both):
    for c in both:
        many = c.post("/retrieve", json={"queries": ["Danube river"], "topk": 3, "return_scores": True})
        one = c.post("/retrieve", json={"query": "Danube river", "topk": 3, "return_scores": True})
        assert one.status_code == 200 and one.content == many.content
        assert len(one.json()["result"]) == 1 and len(one.json()["result"][0]) == 3


def test_msgpack_in_gets_msgpack_out_flat_for_one_query(both):
    want = both[0].post("/retrieve", json={"queries": ["Danube river"], "topk": 3, "return_scores": True}).json()
    for c in both:
        for headers in ({}, {"Content-Type": "application/msgpack"}, {"Content-Type": "application/x-msgpack"}):
            body = packb({"query": "Danube river", "topk": 3, "return_scores": True})
            r = c.post("/retrieve", content=body, headers=headers)
            assert r.status_code == 200 and r.headers["content-type"] == "application/msgpack"
            assert unpackb(r.content) == {"result": want["result"][0]}  # flat: what GEM reads
        r = c.post("/retrieve", content=packb({"queries": ["Danube river"], "topk": 3, "return_scores": True}))
        assert unpackb(r.content) == want  # nested for many queries, as in JSON


def test_bad_forms_get_a_422_that_names_the_problem_without_echo(both):
    marker = f"SECRET-{uuid.uuid4().hex}"
    for c in both:
        for body, expected in [
            (json.dumps({"query": marker, "queries": [marker]}).encode(), "not both"),
            (json.dumps({"query": 3}).encode(), "string"),
            (packb({"query": marker, "topk": 101}), "less than or equal to 100"),
            (packb({"query": marker})[:-3], "expected"),  # truncated
            (b"\x81\xc1\xc0", "got `unknown`"),  # a reserved byte (msgspec names what it found)
        ]:
            r = c.post("/retrieve", content=body)
            assert r.status_code == 422 and expected in r.text and marker not in r.text, r.text


def test_the_reader_round_trips_and_refuses_what_it_must():
    value = {
        "s": "ünï \u2028" * 20,
        "i": [
            0,
            127,
            128,
            255,
            256,
            65535,
            65536,
            2**32,
            2**63,
            -1,
            -32,
            -33,
            -129,
            -(2**15) - 1,
            -(2**31) - 1,
            -(2**63),
        ],
        "f": 1.5,
        "b": [True, False, None],
        "long": ["x" * 300, list(range(20)), {str(i): i for i in range(20)}, "y" * 70000],
    }
    assert unpackb(packb(value)) == value
    assert math.isnan(unpackb(packb(float("nan"))))
    nested = b"\x91" * (MAX_DEPTH + 1) + b"\xc0"
    for bad, reason in [
        (b"\xdd\xff\xff\xff\xff", "items"),  # a 4-billion-item array in 5 bytes: refused before allocating
        (nested, "nested"),
        (b"\xd4\x01\x02", "type byte"),  # extension types
        (b"\xa2\xff\xfe", "UTF-8"),
        (b"\xc0\xc0", "after it"),
        (b"\x81\x90\xc0", "map key"),
    ]:
        with pytest.raises(MsgpackError, match=reason):
            unpackb(bad)
    assert looks_packed("", b"\x83") and looks_packed("application/msgpack; x=y", b"{")
    assert not looks_packed("", b'{"q": 1}') and not looks_packed("application/json", b"\x83")


def test_the_writer_matches_msgspec_byte_for_byte():
    msgspec = pytest.importorskip("msgspec", reason="msgspec comes with gem-llm: pip install -e '.[clients]'")
    value = {"result": [{"document": {"id": "12", "contents": '"T"\n' + "t" * 300}, "score": 3.25}], "n": [-5, 300]}
    assert packb(value) == msgspec.msgpack.encode(value)
    assert unpackb(msgspec.msgpack.encode(value)) == msgspec.msgpack.decode(packb(value)) == value
