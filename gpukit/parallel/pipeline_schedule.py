"""Pipeline schedules: the bubble in both conventions and the task timeline of GPipe, 1F1B and the
interleaved 1F1B (Narayanan et al. 2021 sec. 2.2.1-2.2.2), for the diagram of notebook 06.

Pure calculator. gpukit.parallel re-exports every name here (parallel.bubble, parallel.schedule).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpukit.errors import require_positive, require_positive_int


# ------------------------------------------------------------------------------------ bubble
@dataclass(frozen=True)
class Bubble:
    """Pipeline bubble of p stages, m micro-batches, v virtual stages, in both conventions."""

    pp: int
    microbatches: int
    virtual_stages: int
    bubble_fraction: float  # idle share of the whole step: (p-1)/(v m + p-1)
    bubble_over_ideal: float  # bubble time / ideal time: (p-1)/(v m), Narayanan et al. 2021

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d["conventions"] = {
            "bubble_fraction": "idle share of the step, (p-1)/(v*m + p-1) (GPipe's (p-1)/(m+p-1))",
            "bubble_over_ideal": "bubble time over ideal time, (p-1)/(v*m) (Megatron, Narayanan 2021)",
        }
        return d

    def to_text(self) -> str:
        return (
            f"pp {self.pp}, {self.microbatches} micro-batches, v {self.virtual_stages}: idle share of the step "
            f"{self.bubble_fraction:.1%} [(p-1)/(v m + p-1)]; bubble over ideal {self.bubble_over_ideal:.1%} "
            f"[(p-1)/(v m), Megatron]"
        )


def bubble(pp: int, microbatches: int, virtual_stages: int = 1) -> Bubble:
    """Bubble of 1F1B (v = 1, same as GPipe) or interleaved 1F1B (v > 1), Narayanan et al. 2021 sec. 2.2."""
    p = require_positive_int("pp", pp)
    m = require_positive_int("microbatches", microbatches)
    v = require_positive_int("virtual_stages", virtual_stages)
    if v > 1 and p == 1:
        raise ValueError(f"virtual_stages {v} needs pp > 1, got pp 1")
    if v > 1 and m % p:
        raise ValueError(f"microbatches must be a multiple of pp {p} for the interleaved schedule, got {m}")
    return Bubble(p, m, v, (p - 1) / (v * m + p - 1), (p - 1) / (v * m))


# ------------------------------------------------------------------------------------ schedule
@dataclass(frozen=True)
class Task:
    """One forward or backward pass of one micro-batch through one model chunk on one stage."""

    stage: int
    kind: str  # "F" or "B"
    microbatch: int
    chunk: int
    start: float
    end: float


@dataclass(frozen=True)
class Schedule:
    """A pipeline schedule simulated from its own per-stage order and data dependencies."""

    pp: int
    microbatches: int
    virtual_stages: int
    t_forward: float
    t_backward: float
    tasks: tuple[Task, ...]

    @property
    def makespan(self) -> float:
        return max(t.end for t in self.tasks)

    @property
    def busy(self) -> float:
        return sum(t.end - t.start for t in self.tasks) / self.pp

    @property
    def bubble_fraction(self) -> float:
        """Measured on the simulated timeline: idle share of the step."""
        return 1 - self.busy / self.makespan

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([asdict(t) for t in self.tasks])

    def to_json_dict(self) -> dict:
        return {
            "pp": self.pp,
            "microbatches": self.microbatches,
            "virtual_stages": self.virtual_stages,
            "makespan": self.makespan,
            "bubble_fraction": self.bubble_fraction,
            "tasks": [asdict(t) for t in self.tasks],
        }


def _stage_orders(p: int, m: int, v: int) -> list[list[tuple[str, int, int]]]:
    """Per stage, the order of (kind, microbatch, chunk): 1F1B (v = 1) and Megatron's interleaved 1F1B."""
    orders = []
    for s in range(p):
        if v == 1:  # warm-up p-s-1 forwards, then one forward one backward, then cool-down backwards
            warm = min(p - s - 1, m)
            seq = [("F", i, 0) for i in range(warm)]
            f, b = warm, 0
            while f < m:
                seq.append(("F", f, 0))
                f += 1
                seq.append(("B", b, 0))
                b += 1
            seq += [("B", i, 0) for i in range(b, m)]
        else:  # Megatron's interleaved schedule (schedules.py): micro-batch groups of p, chunk-major
            total = m * v

            def fwd_id(k):
                group, r = divmod(k, p * v)
                return ("F", group * p + r % p, r // p)

            def bwd_id(k):
                group, r = divmod(k, p * v)
                return ("B", group * p + r % p, v - 1 - r // p)

            warm = min((p - s - 1) * 2 + (v - 1) * p, total)
            seq = [fwd_id(k) for k in range(warm)]
            f, b = warm, 0
            while f < total:
                seq.append(fwd_id(f))
                f += 1
                seq.append(bwd_id(b))
                b += 1
            seq += [bwd_id(k) for k in range(b, total)]
        orders.append(seq)
    return orders


MAX_SCHEDULE_TASKS = 100_000  # forward tasks (p x m x v) the simulation visits, about 1-2 s here


def schedule(
    pp: int, microbatches: int, virtual_stages: int = 1, t_forward: float = 1.0, t_backward: float = 2.0
) -> Schedule:
    """Simulate 1F1B (v = 1) or interleaved 1F1B (v > 1): each stage runs its tasks in order, a task
    starts when its stage is free and its inputs exist (forward of chunk c on stage s needs the
    forward on the previous stage; backward needs the next stage's backward, or the last chunk's own
    forward). Chunk c of stage s holds model part c*p + s. Times are per chunk: t_forward/v."""
    p = require_positive_int("pp", pp)
    m = require_positive_int("microbatches", microbatches)
    v = require_positive_int("virtual_stages", virtual_stages)
    tf, tb = require_positive("t_forward", t_forward) / v, require_positive("t_backward", t_backward) / v
    bubble(p, m, v)  # same validation
    if p * m * v > MAX_SCHEDULE_TASKS:  # checked before the simulation, which visits every task
        raise ValueError(
            f"pp x microbatches x virtual_stages must be at most {MAX_SCHEDULE_TASKS:,} to simulate "
            f"every task, got {p}x{m}x{v}={p * m * v:,}; bubble(pp, microbatches, v) gives the formula"
        )
    orders = _stage_orders(p, m, v)
    done: dict[tuple[str, int, int, int], float] = {}  # (kind, mb, chunk, stage) -> end time
    free = [0.0] * p
    pos = [0] * p
    tasks = []
    last_part = p * v - 1
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for s in range(p):
            if pos[s] == len(orders[s]):
                continue
            kind, mb, c = orders[s][pos[s]]
            part = c * p + s
            if kind == "F":
                dep = None if part == 0 else ("F", mb, (part - 1) // p, (part - 1) % p)
            else:
                dep = ("F", mb, c, s) if part == last_part else ("B", mb, (part + 1) // p, (part + 1) % p)
            if dep is not None and dep not in done:
                continue
            start = max(free[s], done.get(dep, 0.0) if dep else 0.0)
            end = start + (tf if kind == "F" else tb)
            done[(kind, mb, c, s)] = end
            free[s] = end
            tasks.append(Task(s, kind, mb, c, start, end))
            pos[s] += 1
            remaining -= 1
            progressed = True
        if not progressed:  # pragma: no cover - a schedule order bug, not user input
            raise RuntimeError("pipeline schedule deadlocked")
    return Schedule(p, m, v, tf * v, tb * v, tuple(tasks))
