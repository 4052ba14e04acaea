"""Recordings keep an allow-list of the request (issue 38, item 2): method, target relative to the base URL, body.

The probes are the credential spellings a deny-list of names missed: encoded or bracketed names
(``api%5Fkey``, ``key[]``), ``;`` separators, ``keys=`` / ``jwt=`` / ``code=``, a key in the base URL's path,
and the ``Cookie`` / ``Proxy-Authorization`` / ``X-Goog-Api-Key`` headers.
"""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from sim_web.backends.recording import RecordingTransport, RelativeTransport, ReplayMiss, ReplayTransport
from sim_web.backends.upstream import join_url

MARK = "zq9SECRET"
PROBE_QUERY = f"api%5Fkey={MARK}1&key[]={MARK}2;token={MARK}3&keys={MARK}4&jwt={MARK}5&code={MARK}6"
PROBE_HEADERS = {
    "Cookie": f"session={MARK}7",
    "Proxy-Authorization": f"Basic {MARK}8",
    "X-Goog-Api-Key": f"{MARK}9",
    "Authorization": f"Bearer {MARK}10",
    "X-API-KEY": f"{MARK}11",
}


def echo(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, text=f"{request.method} {request.content.decode()}")


def test_no_probe_reaches_a_recording_and_another_proxy_replays_it(tmp_path):
    base = f"https://alice:{MARK}0@proxy.example/{MARK}-path-key?{PROBE_QUERY}"
    with httpx.Client(transport=RelativeTransport(RecordingTransport(tmp_path, httpx.MockTransport(echo)), base)) as c:
        c.post(join_url(base, "/search"), content=b'{"q": "Danube"}', headers=PROBE_HEADERS)
        c.get(join_url(base, "/https://en.wikipedia.org/wiki/Paris?oldid=1"), headers=PROBE_HEADERS)
    files = list(tmp_path.glob("*.json"))
    text = "".join(f.read_text() for f in files)
    assert len(files) == 2 and MARK not in text and "alice" not in text and "proxy.example" not in text
    requests = [json.loads(f.read_text())["request"] for f in files]
    assert all(set(r) == {"method", "target", "body"} for r in requests)  # the allow-list, nothing else
    assert {r["target"] for r in requests} == {"/search", "/https://en.wikipedia.org/wiki/Paris?oldid=1"}
    other = "http://127.0.0.1:9"  # another host, no credentials: the same exchanges
    with httpx.Client(transport=RelativeTransport(ReplayTransport(tmp_path), other)) as c:
        assert c.post(f"{other}/search", content=b'{"q": "Danube"}').text == 'POST {"q": "Danube"}'
        assert c.get(f"{other}/https://en.wikipedia.org/wiki/Paris?oldid=1").status_code == 200
        with pytest.raises(ReplayMiss) as miss:
            c.post(f"{other}/search", content=b'{"q": "Paris"}')  # the body still tells them apart
    assert "/search" in str(miss.value)


def test_a_recording_made_before_the_allow_list_still_replays(tmp_path):
    """Format 1 kept the redacted URL and headers; its key was method, redacted path with query, body."""
    body = b'{"q": "Danube"}'
    record = {
        "key": "unused",
        "time_ns": 1,
        "request": {
            "method": "POST",
            "url": "https://google.serper.dev/search?apikey=REDACTED&gl=us",
            "headers": {"content-type": "application/json"},
            "body": base64.b64encode(body).decode(),
        },
        "response": {"status": 200, "headers": {}, "body": base64.b64encode(b"old reply").decode()},
    }
    (tmp_path / "old.json").write_text(json.dumps(record))
    base = "http://127.0.0.1:9"
    with httpx.Client(transport=RelativeTransport(ReplayTransport(tmp_path), base)) as c:
        assert c.post(f"{base}/search?apikey=another&gl=us", content=body).text == "old reply"
        with pytest.raises(ReplayMiss):
            c.post(f"{base}/search?apikey=another&gl=cn", content=body)


def test_serper_records_no_probe_from_its_base_url_and_replays_elsewhere(tmp_path):
    from sim_web.backends.serper import SerperBackend, SerperConfig

    seen: list[httpx.URL] = []

    def serper(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        return httpx.Response(200, json={"organic": [{"title": "Danube", "link": "https://x.example", "snippet": "s"}]})

    base = f"https://alice:{MARK}0@proxy.example/{MARK}-path-key?{PROBE_QUERY}"
    recorder = SerperBackend(
        f"{MARK}-key", SerperConfig(base_url=base), transport=RecordingTransport(tmp_path, httpx.MockTransport(serper))
    )
    recorded = recorder.search("Danube")
    assert seen[0].path == f"/{MARK}-path-key/search" and f"jwt={MARK}5" in str(seen[0])  # the proxy got its key
    assert MARK not in "".join(f.read_text() for f in tmp_path.glob("*.json"))
    replayer = SerperBackend("other", SerperConfig(base_url="http://127.0.0.1:9"), transport=ReplayTransport(tmp_path))
    assert replayer.search("Danube") == recorded and len(seen) == 1
