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

The cause, as far as it can be read from the code: jupyter_client's AsyncZMQSocketChannel.get_msg
awaits `socket.poll(timeout)` on a zmq.asyncio socket, whose readiness comes from ZeroMQ's
edge-triggered file descriptor; a message that lands between a receive and the next poll's
registration raises no new edge, so the poll sleeps until its timeout, and with papermill's default
(no --execution-timeout: nbclient's timeout None) for ever. A busy machine widens that window (the
hang in notebook 01's memory-widget cell came in 3 of about 11 QUICK runs on a busy 2-core machine,
never on a quiet one). The same symptom: jupyter/nbclient#312, jupyter/jupyter_client#922.

Whole-notebook limit. Within `notebook_deadline(seconds)` every wait of these channels raises
NotebookTimeout once the wall clock passes the deadline (checked every slice): nbclient stops the
cell, shuts the kernel down and papermill reports the failure, so even a cell whose reply never comes
(or a kernel that never goes idle) ends as a clear failure, not a hang.
"""

from __future__ import annotations

import contextlib
import time
from queue import Empty

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.manager import AsyncKernelManager
from traitlets import DottedObjectName, Type

POLL_SLICE_S = 0.25  # a missed message costs at most this; an idle wait wakes 4 times a second
_deadline: dict = {"at": None, "seconds": None}  # the running notebook's wall-clock limit (monotonic)


class NotebookTimeout(TimeoutError):
    """A notebook ran past its whole-notebook wall-clock limit (notebook_deadline)."""


@contextlib.contextmanager
def notebook_deadline(seconds: float | None):
    """Within this block, SlicedPollChannel waits raise NotebookTimeout after `seconds` of wall clock
    (None: no limit). One notebook at a time: gpukit.course.runbook runs them in sequence."""
    old = dict(_deadline)
    _deadline.update(at=None if seconds is None else time.monotonic() + seconds, seconds=seconds)
    try:
        yield
    finally:
        _deadline.update(old)


def check_deadline() -> None:
    """NotebookTimeout if the notebook_deadline in force has passed."""
    if _deadline["at"] is not None and time.monotonic() >= _deadline["at"]:
        raise NotebookTimeout(
            f"notebook ran past its whole-notebook limit of {_deadline['seconds']:g} s "
            "(the kernel is shut down; raise --notebook-timeout)"
        )


class SlicedPollChannel(AsyncZMQSocketChannel):
    """An asyncio ZMQ channel whose get_msg polls in slices of POLL_SLICE_S and honours the
    whole-notebook deadline (module docstring)."""

    async def get_msg(self, timeout: float | None = None) -> dict:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            check_deadline()
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
