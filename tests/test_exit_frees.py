"""scripts/exit-frees reads a guest's trace: a worker's exit past its CPU's stack cache to the
next deferred free queued on that CPU, and the program's end to the stats client's exit."""

import importlib.machinery
import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.host

_path = Path(__file__).resolve().parent.parent / "scripts" / "exit-frees"
_loader = importlib.machinery.SourceFileLoader("exit_frees", str(_path))
_spec = importlib.util.spec_from_loader("exit_frees", _loader)
exit_frees = importlib.util.module_from_spec(_spec)
_loader.exec_module(exit_frees)


def line(cpu, t, event, rest, comm="sched-messaging-9"):
    return f"  {comm} [{cpu:03d}] d..1. {t:.6f}: {event}: {rest}"


def exit_of(cpu, t, comm="sched-messaging"):
    return line(cpu, t, "sched_process_exit", f"comm={comm} pid=9 prio=120 group_dead=true")


def work(cpu, t, fn="delayed_vfree_work", on=None):
    on = cpu if on is None else on
    return line(cpu, t, "workqueue_queue_work",
                f"work struct=00 function={fn} workqueue=events req_cpu=8192 cpu={on}")


def test_delays_skip_the_cached_stacks_and_other_cpus_and_work():
    trace = "\n".join([
        line(0, 1.0, "tracing_mark_write", "workload start", comm="sh-1"),
        exit_of(1, 1.10), exit_of(1, 1.20),      # CPU 1 caches these two
        exit_of(1, 1.30),                        # freed at 1.36 on CPU 1
        work(2, 1.32),                           # another CPU's free
        work(1, 1.33, fn="vmstat_update"),       # other work
        work(1, 1.36),
        exit_of(1, 1.40),                        # freed at 1.50
        work(1, 1.50),
        exit_of(2, 1.45),                        # cached, not counted
        line(0, 1.60, "tracing_mark_write", "workload end", comm="sh-1"),
        exit_of(3, 1.64, comm="stats-client"),
        exit_of(3, 1.66, comm="scx_mosaic"),
    ])
    delays, tail = exit_frees.round_samples(trace)
    assert [round(d, 3) for d in sorted(delays)] == [0.06, 0.1]
    assert round(tail, 3) == 0.04


def test_a_trace_without_its_markers_is_an_error():
    with pytest.raises(SystemExit):
        exit_frees.round_samples(exit_of(1, 1.0))
