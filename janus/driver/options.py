"""The options of one Janus function (``janus.function``'s keywords)."""
from __future__ import annotations

from dataclasses import dataclass

from janus import config


@dataclass(frozen=True)
class Options:
    """A Janus function's options; ``None`` reads the ``JANUS_*`` setting at each use."""

    given_profile_calls: int | None = None
    speculate: bool = True
    jit_compile: bool | None = None
    given_strict: bool | None = None

    @property
    def profile_calls(self) -> int:
        return config.profile_calls() if self.given_profile_calls is None else self.given_profile_calls

    @property
    def strict(self) -> bool:
        """Raise :class:`GraphBreakError` instead of running a call eagerly."""
        return config.strict() if self.given_strict is None else self.given_strict

    @property
    def xla_mode(self) -> bool | None:
        """XLA for new graphs: True, False, or None (chosen by measuring each graph)."""
        return config.jit_compile() if self.jit_compile is None else self.jit_compile
