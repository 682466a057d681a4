"""Collective schedules: the format, generators for AI collectives, trace import, placement."""

from __future__ import annotations

from collections.abc import Callable

from .alltoall import alltoall
from .bsp import bsp_training
from .butterfly import halving_doubling_allreduce, recursive_doubling_allreduce
from .format import (
    Collective,
    Recv,
    Schedule,
    ScheduleError,
    Send,
    Step,
    dump,
    from_dict,
    load,
    to_dict,
)
from .moe import expert_popularity, moe_alltoall
from .placement import place
from .ring import ring_allgather, ring_allreduce, ring_reduce_scatter
from .sizes import parse_size, split
from .trace import from_rows, load_trace

#: name -> generator(ranks, size, **options); the names the CLI accepts for --schedule.
GENERATORS: dict[str, Callable[..., Schedule]] = {
    "ring_allreduce": ring_allreduce,
    "halving_doubling_allreduce": halving_doubling_allreduce,
    "recursive_doubling_allreduce": recursive_doubling_allreduce,
    "allgather": ring_allgather,
    "reducescatter": ring_reduce_scatter,
    "alltoall": alltoall,
    "moe_alltoall": moe_alltoall,
}

__all__ = [
    "GENERATORS", "Collective", "Recv", "Schedule", "ScheduleError", "Send", "Step",
    "alltoall", "bsp_training", "dump", "expert_popularity", "from_dict", "from_rows",
    "halving_doubling_allreduce", "load", "load_trace", "moe_alltoall", "parse_size", "place",
    "recursive_doubling_allreduce", "ring_allgather", "ring_allreduce", "ring_reduce_scatter",
    "split", "to_dict",
]
