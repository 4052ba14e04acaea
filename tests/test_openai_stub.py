def test_stub(openai_stub):
    import openai

    openai_stub.reply = ["hello there"]
    c = openai.OpenAI(base_url=openai_stub.base_url, api_key="x", max_retries=0)
    r = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], temperature=0)
    assert r.choices[0].message.content == "hello there"
    assert openai_stub.requests[0]["temperature"] == 0
