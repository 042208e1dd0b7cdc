"""Test configuration: make the harness importable and keep TensorFlow quiet."""
import dataclasses
import math
import os
import sys

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def _no_measured_xla_trial(monkeypatch):
    """Whether a graph's XLA trial starts depends on how long its runs take (``janus.driver.
    xla_choice``: a median under ``LIMITS.xla_min_run_ms`` gives up): on a busy machine a test's graphs
    would start trials, and their extra traces, that a quiet machine never starts.  No test's
    outcome may depend on the machine's speed, so every test starts with the trial given up
    as too small a gain; the XLA tests lower the bound themselves (``monkeypatch.setattr``)."""
    from janus import config

    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, xla_min_run_ms=math.inf))


@pytest.fixture(autouse=True)
def _no_measured_segment_trial(monkeypatch):
    """Whether a graph segment keeps its graph depends on timed runs (``janus.driver.segments``:
    the graph must beat the code as written by ``LIMITS.segment_min_gain``): on a busy machine a
    segment would settle as written where a quiet one keeps its graph.  Every test starts with
    every trial won by the graph; a test of the verdict sets the gain itself."""
    from janus import config

    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, segment_min_gain=-math.inf))


@pytest.fixture(autouse=True)
def _no_measured_whole_run(monkeypatch):
    """Whether a function stops converting because its conversions do not pay depends on
    timed runs (``janus.driver.policy.ConversionPolicy.whole_run``): a test's small function,
    converted several times, would stop on a slow machine where a quick one goes on.  Every
    test starts with the rule off; ``tests/test_whole_run.py`` turns it on and fixes the
    times it weighs."""
    from janus import config

    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, whole_run_slack=None,
                                                              shortest_run_ms=None))
