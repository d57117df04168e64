"""gpukit.course.polling: the headless runner's kernel client finds a message a poll missed within a
slice, and keeps the caller's timeout (no kernel needed: the base channel's get_msg is replaced)."""

from __future__ import annotations

import asyncio
import time
from queue import Empty

import pytest
from jupyter_client.channels import AsyncZMQSocketChannel

from gpukit.course import polling


def _fake_base(monkeypatch, ready_after_s: float | None):
    """The base get_msg: Empty until `ready_after_s` has passed (None: never), waiting out each poll as
    a poll that misses its wake-up does; records the timeouts it was asked for."""
    t0, asked = time.monotonic(), []

    async def get_msg(self, timeout=None):
        asked.append(timeout)
        if ready_after_s is not None and time.monotonic() - t0 >= ready_after_s:
            return {"msg": "reply"}
        await asyncio.sleep(timeout)
        raise Empty

    monkeypatch.setattr(AsyncZMQSocketChannel, "get_msg", get_msg)
    return asked


def test_a_missed_message_is_found_within_a_slice_not_at_the_timeout(monkeypatch):
    asked = _fake_base(monkeypatch, ready_after_s=0.3)
    ch = polling.SlicedPollChannel.__new__(polling.SlicedPollChannel)  # no socket: the base is faked
    t0 = time.monotonic()
    assert asyncio.run(ch.get_msg(timeout=30)) == {"msg": "reply"}
    assert time.monotonic() - t0 < 0.3 + 2 * polling.POLL_SLICE_S
    assert max(asked) <= polling.POLL_SLICE_S + 1e-9 and len(asked) >= 2


@pytest.mark.parametrize("timeout", [0.0, 0.6])
def test_no_message_raises_empty_at_the_callers_deadline(monkeypatch, timeout):
    _fake_base(monkeypatch, ready_after_s=None)
    ch = polling.SlicedPollChannel.__new__(polling.SlicedPollChannel)
    t0 = time.monotonic()
    with pytest.raises(Empty):
        asyncio.run(ch.get_msg(timeout=timeout))
    assert timeout - 0.01 <= time.monotonic() - t0 < timeout + polling.POLL_SLICE_S


def test_the_manager_hands_out_the_sliced_client():
    km = polling.SlicedPollKernelManager()
    kc = km.client()
    assert isinstance(kc, polling.SlicedPollKernelClient)
    assert (
        kc.shell_channel_class is polling.SlicedPollChannel
        and kc.iopub_channel_class is polling.SlicedPollChannel
    )


def test_the_whole_notebook_deadline_ends_a_wait_for_ever(monkeypatch):
    """A reply that never comes, waited for with no timeout (papermill's default): within
    notebook_deadline the wait raises NotebookTimeout within a slice of the deadline (issue 25: QUICK
    notebook 01 hung for ever in 3 of about 11 headless runs on a busy machine)."""
    _fake_base(monkeypatch, ready_after_s=None)
    ch = polling.SlicedPollChannel.__new__(polling.SlicedPollChannel)
    t0 = time.monotonic()
    with polling.notebook_deadline(0.5), pytest.raises(polling.NotebookTimeout, match="0.5 s"):
        asyncio.run(ch.get_msg(timeout=None))
    assert 0.5 - 0.01 <= time.monotonic() - t0 < 0.5 + 2 * polling.POLL_SLICE_S + 1.0  # 1 s: a loaded CPU
    polling.check_deadline()  # the block is over: no deadline in force


@pytest.mark.slow
def test_runbook_fails_a_notebook_past_its_wall_clock_limit(tmp_path):
    """A cell that outlives the whole-notebook limit (but not its cell timeout) is a failed notebook
    named NotebookTimeout, and the kernel is shut down (no child process left)."""
    import nbformat

    from gpukit.course.runbook import run_notebook
    from tests.helpers import live_children

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import time\ntime.sleep(120)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "01_sleep.ipynb"
    nbformat.write(nb, str(path))
    t0 = time.monotonic()
    run = run_notebook(path, tmp_path / "out", timeout_s=300, notebook_timeout_s=5)
    assert not run.ok and run.error.startswith("NotebookTimeout: notebook ran past"), run.error
    assert time.monotonic() - t0 < 90  # kernel start and shutdown on a loaded machine, not the 120 s sleep
    assert not [c for c in live_children() if "ipykernel" in c]
