"""Small helpers shared by several test files (import as `from helpers import ...`)."""

from __future__ import annotations

from pathlib import Path


def tcp_listeners() -> list[tuple[str, int, int]]:
    """(local address as /proc/net/tcp{,6} write it in hex, port, socket inode) of every TCP socket in
    LISTEN state on this machine; [] where /proc/net/tcp does not exist."""
    out = []
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(f).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if cols[3] == "0A":  # 0A = LISTEN
                addr, port = cols[1].rsplit(":", 1)
                out.append((addr, int(port, 16), int(cols[9])))
    return out


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """`gpukit ARGV` in this process: (exit code, stdout, stderr)."""
    from gpukit.cli import main

    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err
