"""Big register and counter arrays live in lazily zeroed memory (externs.zero_cells): they
read and write like the lists they replace, every pipeline instance has its own, a forked
process (sim.parallel) writes its own copy, and values outside 64 bits are refused."""

from __future__ import annotations

import multiprocessing as mp

import pytest

from p4switch import StateError
from p4switch.pipeline import Pipeline
from p4switch.pipeline.externs import LAZY_CELLS, zero_cells
from sim.network import CPU_PORT, DROP_PORT, fabric_program


def _fabric() -> Pipeline:
    return Pipeline(fabric_program(), drop_port=DROP_PORT, cpu_port=CPU_PORT, seed=1)


def test_big_arrays_are_lazy_small_ones_lists() -> None:
    assert isinstance(zero_cells(LAZY_CELLS - 1, False), list)
    assert isinstance(zero_cells(LAZY_CELLS, None), list)  # not a 64-bit integer cell
    big = zero_cells(LAZY_CELLS, True)
    assert isinstance(big, memoryview) and len(big) == LAZY_CELLS and not any(big)
    big[7] = -5
    big[8] += 3
    assert (big[7], big[8], big[9]) == (-5, 3, 0)
    unsigned = zero_cells(LAZY_CELLS, False)
    unsigned[0] = (1 << 64) - 1
    assert unsigned[0] == (1 << 64) - 1


def test_fabric_state_round_trips_and_instances_do_not_share() -> None:
    a = _fabric()
    b = a.new_instance(seed=2)
    big_regs = [n for n, r in a.registers.items() if isinstance(r.values, memoryview)]
    big_ctrs = [n for n, c in a.counters.items() if isinstance(c.packets, memoryview)]
    assert big_regs and big_ctrs  # fabric.p4's 16,384-cell arrays
    reg, ctr = a.registers[big_regs[0]], a.counters[big_ctrs[0]]
    a.register_write(reg.inst.cp_name, 100, 7)
    a.counter_write(ctr.inst.cp_name, 200, 3, 4000)
    assert a.register_read(reg.inst.cp_name, 100) == 7
    assert a.counter_read(ctr.inst.cp_name, 200) == (3, 4000)
    assert b.register_read(reg.inst.cp_name, 100) == 0
    assert b.counter_read(ctr.inst.cp_name, 200) == (0, 0)
    with pytest.raises(StateError, match="2\\^64"):
        a.counter_write(ctr.inst.cp_name, 0, 1 << 64, 0)


def _write(cells: memoryview) -> None:
    cells[1] = 99


def test_a_forked_process_writes_its_own_copy() -> None:
    cells = zero_cells(LAZY_CELLS, False)
    assert isinstance(cells, memoryview)
    p = mp.get_context("fork").Process(target=_write, args=(cells,))
    p.start()
    p.join()
    assert p.exitcode == 0 and cells[1] == 0
