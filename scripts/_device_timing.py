"""Device-time helpers shared by the measurement scripts (depthwise_phases_ab.py,
depthwise_rows_ab.py, separable_ab.py, host_time.py)."""

from __future__ import annotations

import os

import torch


def device_time_us(fn, calls: int = 20) -> float:
    """Median over three batches of `calls` calls of fn(i) (i cycling over three input sets), queued
    behind a long `torch.cuda._sleep` so that host overhead does not enter: device time, us."""
    fn(0)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(3):
        torch.cuda._sleep(int(2e8))  # the calls below queue behind it: device time only
        start.record()
        for i in range(calls):
            fn(i % 3)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / calls * 1000.0)
    return sorted(times)[1]


def with_env(var: str, value: str | None, fn, timed: bool = True):
    """device_time_us(fn) (or fn(0) when not timed) with the environment variable var set to value
    (unset for None), restored to unset afterwards."""
    if value is None:
        os.environ.pop(var, None)
    else:
        os.environ[var] = value
    try:
        return device_time_us(fn) if timed else fn(0)
    finally:
        os.environ.pop(var, None)
