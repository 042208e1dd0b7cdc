"""Speculable sites of user source: what the converter tags and the speculator asks about."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SiteInfo:
    """A site of the user's source (the profiler's ``Site`` key) plus its readable text."""

    key: Any
    kind: str
    text: str

    @property
    def where(self) -> str:
        """``file.py:line`` of the site."""
        return f"{os.path.basename(self.key.filename)}:{self.key.lineno}"
