"""A Jupyter kernel manager for headless runs whose client waits for kernel messages in short slices.

Why. Executing a notebook headless (papermill -> nbclient -> jupyter_client's asyncio channels), a
cell that creates ipywidgets now and then sits until its whole cell timeout although the kernel has
replied and gone idle: the reply is picked up only when the channel's poll times out. Measured on
these machines (one CPU, a notebook of three widget cells, 20 s cell timeout): 3 of 28 runs waited
the full 20 s; with the sliced poll below, 0 of 30. In the suite, with the 300 s cell timeout, one
such wait twice in a notebook ran it past the Binder test's limit. nbclient's open report of the
same symptom: https://github.com/jupyter/nbclient/issues/312.

What. `SlicedPollChannel.get_msg(timeout)` asks the socket again every POLL_SLICE_S until the
caller's timeout (or forever for None), so a message that one poll missed is found within a slice;
the caller sees the same messages and the same Empty at its deadline. gpukit.course.runbook
(`make run`, and the suite's headless run of every notebook) passes `kernel_manager_class=
SlicedPollKernelManager` to papermill, which hands it to nbclient. JupyterLab is not involved.
"""

from __future__ import annotations

import time
from queue import Empty

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.manager import AsyncKernelManager
from traitlets import DottedObjectName, Type

POLL_SLICE_S = 0.25  # a missed message costs at most this; an idle wait wakes 4 times a second


class SlicedPollChannel(AsyncZMQSocketChannel):
    """An asyncio ZMQ channel whose get_msg polls in slices of POLL_SLICE_S (module docstring)."""

    async def get_msg(self, timeout: float | None = None) -> dict:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = (
                POLL_SLICE_S if deadline is None else max(0.0, min(POLL_SLICE_S, deadline - time.monotonic()))
            )
            try:
                return await super().get_msg(timeout=step)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise


class SlicedPollKernelClient(AsyncKernelClient):
    """AsyncKernelClient with SlicedPollChannel for the shell and IOPub channels (nbclient waits on both)."""

    shell_channel_class = Type(SlicedPollChannel)
    iopub_channel_class = Type(SlicedPollChannel)


class SlicedPollKernelManager(AsyncKernelManager):
    """AsyncKernelManager whose client() is a SlicedPollKernelClient; pass it to papermill as
    kernel_manager_class."""

    client_class = DottedObjectName("gpukit.course.polling.SlicedPollKernelClient")
    client_factory = Type(SlicedPollKernelClient, klass=AsyncKernelClient)
