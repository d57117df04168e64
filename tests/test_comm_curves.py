"""gpukit.comm.collective_curves (moved from the notebook-04 widget): every collective, ring/tree, and the
layout's bandwidth bound that busbw approaches."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukit import comm
from gpukit.catalog import get_interconnect


def test_flat_bound_is_the_link_and_busbw_approaches_it():
    r = comm.collective_curves("all_reduce", "ib-ndr", 2**30, 16, gpus_per_node=1)
    assert r.layout == "flat" and r.bound_busbw_gbps == pytest.approx(
        get_interconnect("ib-ndr").bandwidth_gbps
    )
    assert r.rows[-1]["busbw_gbps"] == pytest.approx(r.bound_busbw_gbps, rel=1e-3)
    assert all(row["busbw_gbps"] <= r.bound_busbw_gbps * (1 + 1e-9) for row in r.rows)


def test_hierarchical_bound_is_above_the_port_and_below_nvlink():
    """2 nodes x 8 H100 (NVLink4 450 GB/s inside, NDR 50 GB/s per GPU across): busbw above one port is not an
    error, it is the layout; t_bw = 2(g-1)/g S/B_nv + 2(m-1)/m (S/g)/B_ib (Thakur et al. 2005)."""
    r = comm.collective_curves("all_reduce", "ib-ndr", 2**28, 16, gpus_per_node=8, intra="nvlink4")
    g, m, s = 8, 2, 2.0**30
    t_bw = 2 * (g - 1) / g * s / 450e9 + 2 * (m - 1) / m * (s / g) / 50e9
    assert r.layout == "hierarchical"
    assert r.bound_busbw_gbps == pytest.approx(comm.busbw_factor("all_reduce", 16) * s / t_bw / 1e9, rel=1e-9)
    assert r.link_gbps < r.bound_busbw_gbps < 450
    assert max(row["busbw_gbps"] for row in r.rows) <= r.bound_busbw_gbps * (1 + 1e-9)


@pytest.mark.parametrize("op", comm.CURVE_OPS)
def test_every_op_matches_collective_time_when_flat(op):
    ib = get_interconnect("ib-hdr")
    r = comm.collective_curves(op, ib, 2**20, 8, gpus_per_node=1)
    assert r.time_s == pytest.approx(comm.collective_time(op, 2**20, 8, ib).time_s)
    assert r.bound_busbw_gbps == pytest.approx(ib.bandwidth_gbps)
    # the other collectives across nodes are a flat ring over the network link
    h = comm.collective_curves(op, ib, 2**20, 16, gpus_per_node=8)
    assert h.layout == ("hierarchical" if op == "all_reduce" else "flat")


def test_tree_and_bad_values():
    ring = comm.collective_curves("all_reduce", "ib-ndr", 1024, 64, gpus_per_node=1)
    tree = comm.collective_curves("all_reduce", "ib-ndr", 1024, 64, gpus_per_node=1, algorithm="tree")
    assert tree.time_s < ring.time_s  # small messages: log2(n) latency steps instead of 2(n-1)
    with pytest.raises(ValueError, match="tree applies to"):
        comm.collective_curves("all_gather", "ib-ndr", 1024, 8, gpus_per_node=1, algorithm="tree")
    with pytest.raises(ValueError, match="op must be one of"):
        comm.collective_curves("all_to_all")
    with pytest.raises(ValueError, match="multiple of gpus_per_node"):
        comm.collective_curves(n_ranks=12, gpus_per_node=8)
    with pytest.raises(ValueError, match="size_bytes"):
        comm.collective_curves(size_bytes=0)
    with pytest.raises(ValueError, match="nics"):
        comm.collective_curves(nics="shared")


@settings(max_examples=30, deadline=None)
@given(
    op=st.sampled_from(comm.CURVE_OPS),
    nodes=st.integers(1, 8),
    gpn=st.sampled_from([1, 2, 4, 8]),
    nics=st.sampled_from(comm.NICS),
)
def test_busbw_never_exceeds_the_bound(op, nodes, gpn, nics):
    if nodes * gpn < 2:
        return
    r = comm.collective_curves(op, "eth-100g", 2**24, nodes * gpn, gpus_per_node=gpn, nics=nics)
    assert max(row["busbw_gbps"] for row in r.rows) <= r.bound_busbw_gbps * (1 + 1e-9)
    times = [row["time_s"] for row in r.rows]
    assert times == sorted(times)
    assert r.to_json_dict()["bound_busbw_gbps"] == r.bound_busbw_gbps and len(r.to_frame()) == len(
        comm.SWEEP_SIZES
    )
