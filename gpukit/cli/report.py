"""The one result wrapper of the command line: what --json prints and what the terminal shows.

A handler returns a Report (or a plain dict); gpukit.cli.emit prints `to_json_dict()` with --json
and `to_text()` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Report:
    """A handler's result: the JSON payload (a dict or a list) and its text rendering, or a function
    that renders it (a table that needs pandas is drawn only when the text is asked for)."""

    payload: Any
    text: str | Callable[[], str]

    def to_json_dict(self):
        return self.payload

    def to_text(self) -> str:
        return self.text() if callable(self.text) else self.text
