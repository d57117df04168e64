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
