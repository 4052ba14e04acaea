"""The process-wide memory budget of PythonInterpreter calls (issue 26).

Concurrency is observed through counts (how many calls held a reservation at once, how many had
to wait), never through wall time.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sandbox_probe import BARE

from sim_web.tools.python import _budget, sandbox
from sim_web.tools.python._budget import BUDGET_ENV, MemoryBudget, memory_budget, set_memory_budget
from sim_web.tools.python.sandbox import ERROR_PREFIX, PythonConfig, run_python, sandbox_problem

PATIENCE_S = 120.0  # how long a test waits for an event before it fails (a hang, not a timing assertion)


@pytest.fixture(autouse=True)
def _default_budget_afterwards():
    yield
    set_memory_budget(None)


def _hold_in_threads(budget: MemoryBudget, sizes: list[int]) -> tuple[list[threading.Event], threading.Event]:
    """Threads that each reserve one of ``sizes`` in turn and hold it until ``release`` is set."""
    entered, release = [threading.Event() for _ in sizes], threading.Event()

    def hold(index: int) -> None:
        with budget.reserve(sizes[index]):
            entered[index].set()
            release.wait(PATIENCE_S)

    for index in range(len(sizes)):
        threading.Thread(target=hold, args=(index,), daemon=True).start()
        _until(lambda: budget.holders + budget.waiting == index + 1)  # noqa: B023 (waited for here) a fixed arrival order
    return entered, release


def _until(condition) -> None:
    done = threading.Event()
    for _ in range(int(PATIENCE_S / 0.01)):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError("the condition never held")


def test_reservations_beyond_the_budget_wait_their_turn():
    budget = MemoryBudget(200)
    entered, release = _hold_in_threads(budget, [100, 100, 100])
    assert entered[0].is_set() and entered[1].is_set() and not entered[2].is_set()
    assert (budget.holders, budget.waiting, budget.waits) == (2, 1, 1)
    release.set()
    assert entered[2].wait(PATIENCE_S)
    _until(lambda: budget.holders == 0)
    assert budget.peak_holders == 2 and budget.waits == 1


def test_first_come_first_served_and_an_oversized_call_runs_alone():
    budget = MemoryBudget(200)
    entered, release = _hold_in_threads(budget, [150, 500, 10])
    # 500 MiB exceeds the whole budget: it waits for the 150 to end, then holds all of it; the 10 MiB
    # that arrived after it does not overtake it, though it would fit beside the 150
    assert [e.is_set() for e in entered] == [True, False, False] and budget.waiting == 2
    release.set()
    assert all(e.wait(PATIENCE_S) for e in entered)
    _until(lambda: budget.holders == 0)
    assert budget.peak_holders == 1 and budget.waits == 2


def test_a_caller_that_stops_waiting_gives_its_turn_away():
    budget = MemoryBudget(100)
    with budget.reserve(100):
        stopped = []

        def interrupted(*_args, **_kwargs):
            raise KeyboardInterrupt

        def impatient() -> None:
            original = budget._cond.wait_for
            budget._cond.wait_for = interrupted  # Ctrl-C while waiting
            try:
                with budget.reserve(50):
                    pass
            except KeyboardInterrupt:
                stopped.append(True)
            finally:
                budget._cond.wait_for = original

        worker = threading.Thread(target=impatient)
        worker.start()
        worker.join(PATIENCE_S)
        assert stopped == [True] and budget.waiting == 0
    with budget.reserve(50):  # the next caller is served: the abandoned ticket was skipped
        assert budget.holders == 1


def test_budget_size_from_the_environment_and_default(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "3000")
    set_memory_budget(None)
    assert memory_budget().total_mb == 3000
    monkeypatch.setenv(BUDGET_ENV, "lots")
    set_memory_budget(None)
    with pytest.raises(ValueError, match=BUDGET_ENV):
        memory_budget()
    out = run_python("print(1)", PythonConfig(**BARE))
    assert out.startswith(ERROR_PREFIX) and BUDGET_ENV in out  # a text answer naming the variable, no crash
    monkeypatch.delenv(BUDGET_ENV)
    set_memory_budget(None)
    assert memory_budget().total_mb == max(1, _budget.available_memory_mb() // 2)
    with pytest.raises(ValueError, match="positive"):
        MemoryBudget(0)


def test_concurrent_sandboxes_beyond_the_budget_wait(monkeypatch):
    """Four calls of 256 MiB under a 512 MiB budget: two run at once, the other two wait."""
    layers = {} if sandbox_problem() is None else BARE  # the real sandbox where it can run
    config = PythonConfig(memory_mb=256, timeout_s=60, cpu_s=60, **layers)
    budget = set_memory_budget(2 * config.memory_mb)
    running, peak, entries, lock = [0], [0], [0], threading.Lock()
    both_in = threading.Barrier(2, timeout=PATIENCE_S)
    real = sandbox._run_isolated

    def counted(code: str, cfg: PythonConfig) -> str:
        with lock:
            running[0] += 1
            entries[0] += 1
            peak[0] = max(peak[0], running[0])
            first_two = entries[0] <= 2
        if first_two:  # the first two hold their reservations until the other two are seen waiting
            both_in.wait()
            _until(lambda: budget.waiting == 2)
        try:
            return real(code, cfg)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(sandbox, "_run_isolated", counted)
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda i: run_python(f"print({i} * 2)", config), range(4)))
    assert outs == [f"stdout:\n{i * 2}\n" for i in range(4)]
    assert peak[0] == 2 and budget.peak_holders == 2  # never more than the budget allows
    assert budget.waits == 2 and budget.holders == 0  # the two beyond it waited, and all gave it back
