"""The intersection evidence benchmark's per-task reading: which countries the results name, and what a reader can
pick from them."""

from benchmarks.bench_intersection_evidence import plan_queries, task_evidence

COUNTRIES = ["Cambodia", "China", "Laos", "Myanmar", "Thailand", "Vietnam"]
TASK = {"question": "Which country borders Laos and Myanmar?", "answer": "Thailand"}


def test_the_plans_are_the_clue_searches_and_the_scripts_first_three():
    q = "Which country borders Laos, Myanmar and Vietnam?"
    assert plan_queries(q, "clues") == [
        "country bordering Laos",
        "country bordering Myanmar",
        "country bordering Vietnam",
    ]
    assert plan_queries(q, "joint") == ["country borders Laos, Myanmar and Vietnam", *plan_queries(q, "clues")[:2]]


def test_an_answer_that_every_search_names_alone_is_pinned_down():
    blocks = [[("Thailand", "Thailand borders Laos."), ("China", "")], [("Vietnam", "Thailand and Myanmar")]]
    ev = task_evidence(TASK, blocks, COUNTRIES)
    assert ev == {"every": 1.0, "alone": 1.0, "reader": 1.0, "script": 1.0}


def test_a_tie_scores_the_reader_one_over_its_size_and_a_name_in_one_search_scores_nothing():
    tie = [[("China", ""), ("Thailand", "")], [("China", "Thailand")]]
    ev = task_evidence(TASK, tie, COUNTRIES)
    assert ev["every"] == 1.0 and ev["alone"] == 0.0 and ev["reader"] == 0.5
    assert ev["script"] == 0.0  # its tie-break (the better summed title rank) picks China
    missed = [[("Vietnam", ""), ("China", "")], [("China", "Thailand")]]
    assert task_evidence(TASK, missed, COUNTRIES) == {"every": 0.0, "alone": 0.0, "reader": 0.0, "script": 0.0}
