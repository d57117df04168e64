"""Helpers for the Binder and browser tests: process trees, a throwaway JupyterLab, headless Chromium.

Used by tests/test_browser.py (JupyterLab driven by Playwright in Debian's Chromium) and
tests/test_binder.py (peak memory of a papermill run and its kernel). Playwright is imported
lazily so that importing this module never needs it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
# Flags from REFERENCE.md section 5: root in a container, no GPU, small /dev/shm, no network chatter.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
IDLE = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
# Elements that are controls (moved by a learner), not outputs: removed before comparing outputs.
CONTROL_SELECTORS = (
    ".widget-slider, .widget-dropdown, .widget-toggle-buttons, .widget-radio, .widget-checkbox, "
    ".widget-text, .widget-button, .widget-readout, input, select, button, .widget-label"
)
ERROR_SELECTORS = ".gpukit-error, .jupyter-widgets-error-widget"
PAGE_SIZE = 4096


# ----------------------------------------------------------------------------- processes


def _children_map() -> dict[int, list[int]]:
    """Map pid -> direct children, read from /proc/*/stat (Linux only)."""
    kids: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def process_tree(pid: int) -> list[int]:
    """pid and all its live descendants (kernels run in their own session, so not by group)."""
    kids = _children_map()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def rss_bytes(pid: int) -> int:
    """Resident set size of one process in bytes (0 if it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE
    except (OSError, IndexError, ValueError):
        return 0


def tree_rss_bytes(pid: int) -> int:
    """Summed RSS of a process tree in bytes: shared pages count once per process (an upper bound)."""
    return sum(rss_bytes(p) for p in process_tree(pid))


def kill_tree(pid: int, grace_s: float = 10.0) -> None:
    """SIGTERM a process, its group and every descendant, then SIGKILL what is left after grace_s."""
    pids = process_tree(pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p, sig) if p == pid else os.kill(p, sig)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.1)
        if not any(_alive(p) for p in pids):
            return


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    if state == "Z":  # a zombie child of ours: reap it
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        return False
    return True


def free_port() -> int:
    """A loopback TCP port that was free a moment ago (the kernel picks it: bind port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------- JupyterLab


@dataclass
class Lab:
    """A running JupyterLab server: base URL, token, its log file and process."""

    base_url: str
    token: str
    log_path: Path
    proc: subprocess.Popen = field(repr=False)

    def url(self, notebook: str, workspace: str) -> str:
        return f"{self.base_url}/lab/workspaces/{workspace}/tree/{notebook}?token={self.token}&reset"

    def log_tail(self, n_chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-n_chars:]


@contextlib.contextmanager
def jupyterlab(
    root_dir: Path, *, python: str = sys.executable, env: dict | None = None, start_timeout_s: float = 120.0
):
    """Start JupyterLab on a free loopback port with a random token; kill its process tree on exit.

    Settings and workspaces live in a fresh temporary folder (no state from earlier runs); the
    notebook windowing mode is 'none' so every cell stays in the DOM for the assertions.
    """
    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="gpukit-lab-") as tmp:
        tmp_path = Path(tmp)
        settings = tmp_path / "settings"
        tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
        tracker.parent.mkdir(parents=True)
        tracker.write_text(json.dumps({"windowingMode": "none"}))
        # Never autosave: a run's outputs must not land in the repository's stripped notebooks.
        docmanager = settings / "@jupyterlab" / "docmanager-extension" / "plugin.jupyterlab-settings"
        docmanager.parent.mkdir(parents=True)
        docmanager.write_text(json.dumps({"autosave": False}))
        # No "news" or update checks: nothing may reach the network.
        news = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
        news.parent.mkdir(parents=True)
        news.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        full_env = dict(os.environ if env is None else env)
        full_env.update(
            JUPYTERLAB_SETTINGS_DIR=str(settings),
            JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
            JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        )
        log_path = tmp_path / "jupyterlab.log"
        proc = None
        for _attempt in range(3):  # the port can be taken between free_port() and the bind
            port = free_port()
            cmd = [
                python,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--port",
                str(port),
                "--ServerApp.port_retries=0",
                "--IdentityProvider.token",
                token,
                "--ServerApp.ip",
                "127.0.0.1",
                "--ServerApp.root_dir",
                str(root_dir),
                "--LabApp.expose_app_in_browser=True",
                # Checkpoints (written when a notebook opens) go to the temporary folder too.
                f"--FileCheckpoints.checkpoint_dir={tmp_path / 'checkpoints'}",
            ]
            if os.geteuid() == 0:
                cmd.append("--allow-root")
            with open(log_path, "ab") as log:
                proc = subprocess.Popen(
                    cmd,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=full_env,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            lab = Lab(f"http://127.0.0.1:{port}", token, log_path, proc)
            try:
                if _wait_ready(lab, start_timeout_s):
                    break
            except BaseException:
                kill_tree(proc.pid)
                raise
            kill_tree(proc.pid)
        else:
            raise RuntimeError(f"JupyterLab did not start; log tail:\n{lab.log_tail()}")
        try:
            yield lab
        finally:
            kill_tree(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)


def _wait_ready(lab: Lab, timeout_s: float) -> bool:
    """Poll /api/status until the server answers (True) or exits (False); raise on timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if lab.proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"{lab.base_url}/api/status?token={lab.token}", timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"JupyterLab not ready after {timeout_s:.0f} s; log tail:\n{lab.log_tail()}")


# ----------------------------------------------------------------------------- browser


@contextlib.contextmanager
def chromium():
    """Headless Debian Chromium through Playwright (Playwright's own browser download is not used)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


_KERNEL_IDLE_JS = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!(w && w.content && k && k.status === 'idle' && k.connectionStatus === 'connected');
}"""

# Per code cell of the open notebook: execution count, error outputs, number of widget views.
_CELLS_JS = """() => {
  const nb = window.jupyterapp.shell.currentWidget;
  const cells = nb.content.model.cells;
  const res = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type !== 'code') continue;
    const outs = c.outputs.toJSON();
    res.push({
      index: i,
      source: c.sharedModel.getSource().slice(0, 80),
      count: c.executionCount,
      errors: outs.filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue),
      widgets: outs.filter(o => o.data && o.data['application/vnd.jupyter.widget-view+json']).length,
    });
  }
  return res;
}"""

# The output area of a cell with its controls removed: what must change when a control moves.
_OUTPUT_JS = """(area, controls) => {
  const clone = area.cloneNode(true);
  clone.querySelectorAll(controls).forEach(e => e.remove());
  return clone.innerHTML;
}"""


@dataclass
class NotebookRun:
    """What the browser saw after running every cell of one notebook."""

    notebook: str
    cells: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    widget_views: int = 0
    rendered_widgets: int = 0
    control: str | None = None
    output_changed: bool | None = None
    seconds: float = 0.0


def run_notebook(
    page,
    lab: Lab,
    notebook: str,
    *,
    screenshot: Path,
    run_timeout_s: float = 600.0,
    change_timeout_s: float = 60.0,
) -> NotebookRun:
    """Open notebook, run all cells, collect errors and widgets, move one control, screenshot.

    notebook is relative to the server's root_dir. The result's output_changed is None when the
    notebook shows no slider or dropdown.
    """
    t0 = time.monotonic()
    res = NotebookRun(notebook)
    workspace = "t" + secrets.token_hex(4)
    page.goto(lab.url(notebook, workspace), wait_until="domcontentloaded", timeout=120_000)
    # The indicator reads 'idle' before any kernel exists: wait for the session's own kernel.
    page.wait_for_function(_KERNEL_IDLE_JS, polling=300, timeout=180_000)
    page.wait_for_selector(IDLE, state="attached", timeout=60_000)
    page.evaluate("window.jupyterapp.shell.collapseLeft()")  # more room for the notebook
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    died = _wait_run_done(page, run_timeout_s)
    if died:
        res.errors.append(f"{died} while running the notebook")

    res.cells = page.evaluate(_CELLS_JS)
    for c in res.cells:
        if c["errors"]:
            res.errors += [f"cell {c['index']}: {e}" for e in c["errors"]]
        elif c["count"] is None and c["source"].strip():
            res.errors.append(f"cell {c['index']} did not run: {c['source']!r}")
    res.widget_views = sum(c["widgets"] for c in res.cells)
    res.rendered_widgets = _count_rendered_widgets(page, res.widget_views)
    res.errors += _dom_errors(page)
    _move_one_control(page, res, change_timeout_s)
    res.errors += [e for e in _dom_errors(page) if e not in res.errors]
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshot))
    res.seconds = time.monotonic() - t0
    return res


def shutdown_kernel(page, timeout_s: float = 30.0) -> None:
    """Shut down the open notebook's kernel (each notebook's kernel would otherwise stay alive)."""
    page.evaluate("""async () => {
        const w = window.jupyterapp.shell.currentWidget;
        if (w && w.sessionContext) { await w.sessionContext.shutdown(); }
    }""")
    page.wait_for_timeout(200)


def _wait_run_done(page, timeout_s: float) -> str | None:
    """Wait until no cell is queued or running ('[*]') and the kernel is idle, 3 polls in a row.

    Returns the kernel's status if it died or restarted on the way (out of memory, a crash), else None.
    """
    page.wait_for_timeout(500)  # let run-all queue the cells before looking
    handle = page.wait_for_function(
        """() => {
          const w = window.jupyterapp.shell.currentWidget;
          const k = w && w.sessionContext.session && w.sessionContext.session.kernel;
          if (!k || ['dead', 'restarting', 'autorestarting'].includes(k.status)) {
            return 'kernel ' + (k ? k.status : 'gone');
          }
          const busy = [...document.querySelectorAll('.jp-Notebook .jp-InputPrompt')]
              .some(p => p.textContent.includes('*'));
          const idle = document.querySelector(".jp-Notebook-ExecutionIndicator[data-status='idle']");
          if (busy || !idle) { window.__gpukitIdle = 0; return false; }
          window.__gpukitIdle = (window.__gpukitIdle || 0) + 1;
          return window.__gpukitIdle >= 3 ? 'done' : false;
        }""",
        polling=500,
        timeout=timeout_s * 1000,
    )
    status = handle.json_value()
    return None if status == "done" else status


def _count_rendered_widgets(page, expected: int) -> int:
    """Top-level widget views attached in cell outputs (a .jupyter-widgets root); waits up to 30 s."""
    js = """() => [...document.querySelectorAll(
        '.jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output > .jupyter-widgets')]
        .filter(w => !w.classList.contains('jupyter-widgets-error-widget')).length"""
    if expected:
        with contextlib.suppress(Exception):
            page.wait_for_function(f"() => ({js})() >= {expected}", timeout=30_000)
    return page.evaluate(js)


def _dom_errors(page) -> list[str]:
    """Visible error elements: gpukit views' .gpukit-error and ipywidgets' error widget."""
    texts = page.evaluate(
        """(sel) => [...document.querySelectorAll(sel)]
            .filter(e => e.offsetParent !== null && e.textContent.trim())
            .map(e => e.className + ': ' + e.textContent.trim().slice(0, 200))""",
        ERROR_SELECTORS,
    )
    # A view prints an unexpected exception's traceback into its output (widgets/base.py _show_bug).
    tracebacks = page.evaluate(
        """() => [...document.querySelectorAll('.jupyter-widgets .jp-OutputArea-output')]
            .map(e => e.innerText).filter(t => t.includes('Traceback (most recent call last)'))
            .map(t => 'traceback in a widget: ' + t.trim().split('\\n').slice(-1)[0].slice(0, 200))"""
    )
    shown = page.evaluate("() => document.body.innerText.includes('Error displaying widget')")
    return texts + tracebacks + (["Error displaying widget"] if shown else [])


def _move_one_control(page, res: NotebookRun, timeout_s: float) -> None:
    """Move the first slider (arrow keys) or dropdown (next option); record if the output changed."""
    slider = page.locator(".jp-OutputArea .widget-slider:not(.widget-vslider)").first
    dropdown = page.locator(".jp-OutputArea .widget-dropdown select").first
    if slider.count():
        res.control = "slider"
        control = slider
    elif dropdown.count():
        res.control = "dropdown"
        control = dropdown
    else:
        return
    area = control.locator("xpath=ancestor::div[contains(@class,'jp-Cell-outputArea')][1]")
    control.scroll_into_view_if_needed()
    before = _output_html(area)
    if res.control == "slider":
        readout = control.locator(".widget-readout")
        old = readout.inner_text() if readout.count() else None
        handle = control.locator(".noUi-handle").first
        handle.click()
        for key in ("ArrowRight", "ArrowLeft"):  # at the maximum, move left instead
            handle.press(key)
            handle.press(key)
            page.wait_for_timeout(300)
            if readout.count() == 0 or readout.inner_text() != old:
                break
    else:
        values = control.evaluate("s => [...s.options].map(o => o.value)")
        current = control.evaluate("s => s.value")
        others = [v for v in values if v != current]
        if not others:
            res.control = None
            return
        control.select_option(others[0])
    # Changed = the kernel is idle and the output differs from before and is the same in two
    # polls 0.5 s apart (a view clears its output before it redraws).
    deadline = time.monotonic() + timeout_s
    res.output_changed, last = False, before
    while time.monotonic() < deadline:
        page.wait_for_timeout(500)
        now = _output_html(area)
        if now != before and now == last and page.locator(IDLE).count() > 0:
            res.output_changed = True
            break
        last = now


def _output_html(area) -> str:
    """innerHTML of an output area with every control removed, whitespace collapsed."""
    return re.sub(r"\s+", " ", area.evaluate(_OUTPUT_JS, CONTROL_SELECTORS))
