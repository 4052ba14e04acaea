"""What the sandbox's futex rule costs ordinary Python: the same workloads with and without it, in one run.

Run: ``python -m benchmarks.bench_sandbox_futex [--rounds 5]`` (needs bubblewrap).

Issue 59 (item 9) closed a channel between concurrent sandboxes: a shared futex (no ``FUTEX_PRIVATE_FLAG``) on a
read-only mapping of a file they all see. The filter now answers shared futex waits and wakes itself, so
process-shared locks (``multiprocessing``'s semaphores) still exclude but a contended waiter spins instead of
sleeping, and a timed wait on one returns at once. Each round runs every workload once in the real sandbox with the
full filter, and once with the same filter less its futex block (alternating, so both see the same machine). The
workloads report their own wall time and CPU time (the process and its reaped children); the table gives medians
over the rounds and the ratio rule / no rule. On a shared machine the numbers move with the other jobs.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
from unittest import mock

from benchmarks.common import table

WORKLOADS = r"""
import multiprocessing as mp, os, resource, threading, time
ctx = mp.get_context("fork")

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

def measure(name, fn):
    w, c = time.perf_counter(), cpu()
    fn()
    print(f"{name}: {time.perf_counter() - w:.4f} {cpu() - c:.4f}", flush=True)

def square(x):
    return x * x

def pool():
    with ctx.Pool(2) as p:
        assert sum(p.map(square, range(20000), chunksize=50)) == sum(x * x for x in range(20000))

def bump(v, n):
    for _ in range(n):
        with v.get_lock():
            v.value += 1

def contended():
    v = ctx.Value("i", 0)
    ps = [ctx.Process(target=bump, args=(v, 5000)) for _ in range(2)]
    [p.start() for p in ps]; [p.join() for p in ps]
    assert v.value == 10000

def echo(a, b, n):
    for _ in range(n):
        b.put(a.get())

def queue():
    a, b = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=echo, args=(a, b, 1000)); p.start()
    for i in range(1000):
        a.put(i); assert b.get() == i
    p.join()

def hold(lock, ready):
    with lock:
        ready.set(); time.sleep(0.5)

def held():
    lock, ready = ctx.Lock(), ctx.Event()
    p = ctx.Process(target=hold, args=(lock, ready)); p.start()
    while not ready.wait(0.01):
        pass
    with lock:  # waits about 0.5 s for the other process
        pass
    p.join()

def timed():
    assert ctx.Event().wait(0.2) is False

def threads():
    lock, box = threading.Lock(), [0]
    def work():
        for _ in range(20000):
            with lock:
                box[0] += 1
    ts = [threading.Thread(target=work) for _ in range(4)]
    [t.start() for t in ts]; [t.join() for t in ts]
    assert box[0] == 80000
    e = threading.Event(); e.wait(0.2)

for name, fn in [("pool", pool), ("contended", contended), ("queue", queue), ("held", held), ("timed", timed),
                 ("threads", threads)]:
    measure(name, fn)
"""
#: What each workload does (the table's first column).
LABELS = {
    "pool": "Pool(2).map, 20,000 items",
    "contended": "2 processes x 5,000 increments under mp.Value's lock",
    "queue": "1,000 round trips through two mp.Queues",
    "held": "mp.Lock held 0.5 s by another process",
    "timed": "mp.Event().wait(0.2), never set",
    "threads": "threading: 4 x 20,000 Lock increments, Event.wait(0.2)",
}


def run_once(rule: bool) -> dict[str, tuple[float, float]]:
    """One sandboxed run of the workloads, with or without the futex rule: ``{name: (wall_s, cpu_s)}``."""
    from sim_web.tools.python import _seccomp
    from sim_web.tools.python.sandbox import PythonConfig, run_python

    _seccomp.filter_program.cache_clear()
    patch = contextlib.nullcontext() if rule else mock.patch.object(_seccomp, "_futex_block", lambda number: [])
    with patch:
        out = run_python(WORKLOADS, PythonConfig(timeout_s=300, cpu_s=300, memory_mb=1024))
        _seccomp.filter_program.cache_clear()
    found = {}
    for line in out.removeprefix("stdout:\n").splitlines():
        name, _, numbers = line.partition(": ")
        if name in LABELS:
            wall, cpu = numbers.split()
            found[name] = (float(wall), float(cpu))
    if set(found) != set(LABELS):
        raise RuntimeError(f"the sandboxed workloads did not all finish (rule={rule}): {out[-2000:]}")
    return found


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the rounds, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="runs with and without the rule (medians over them)")
    args = parser.parse_args(argv)
    runs: dict[bool, list[dict[str, tuple[float, float]]]] = {True: [], False: []}
    for _ in range(args.rounds):
        for rule in (False, True):
            runs[rule].append(run_once(rule))
    rows = []
    for name, label in LABELS.items():
        med = {r: [statistics.median(run[name][i] for run in runs[r]) for i in (0, 1)] for r in runs}
        rows.append(
            [
                label,
                *(
                    f"{med[False][i]:.3f} / {med[True][i]:.3f} ({med[True][i] / max(med[False][i], 1e-4):.2f}x)"
                    for i in (0, 1)
                ),
            ]
        )
    print(table(["workload", "wall s: no rule / rule (ratio)", "CPU s: no rule / rule (ratio)"], rows))


if __name__ == "__main__":
    main()
