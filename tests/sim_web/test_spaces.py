from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from sim_web.env.spaces import TextSpace


def test_text_space_accepts_real_text():
    sp = TextSpace(100)
    assert sp.contains('Zürich 中文 <tool_call>{"a": 1}</tool_call>\n')
    assert sp.contains("")
    assert not sp.contains("x" * 101)
    assert not sp.contains(b"bytes")


def test_text_space_sampling_is_seeded_and_in_space():
    a, b = TextSpace(50, seed=3), TextSpace(50, seed=3)
    sa, sb = [a.sample() for _ in range(5)], [b.sample() for _ in range(5)]
    assert sa == sb and all(a.contains(s) for s in sa)


def test_vector_utilities_treat_it_as_text():
    sp = TextSpace(20)
    batched = batch_space(sp, 3)
    out = concatenate(sp, ["a", "é", "中"], create_empty_array(sp, 3))
    assert len(batched) == 3 and tuple(out) == ("a", "é", "中")
