"""tf.distribute custom training loops through Janus: MirroredStrategy over two logical
CPU devices (each case in a fresh interpreter, since logical devices must be configured
before TensorFlow starts), compared with the same loop run eagerly under the strategy."""
import json
import os
import subprocess
import sys

import numpy as np

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "mirrored_train.py")


def _run(mode: str, steps: int = 12) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, SCRIPT, mode, str(steps)], capture_output=True, text=True, timeout=240,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _same_as_eager(result: dict) -> None:
    assert len(result["eager"]) == len(result["janus"]) > 0
    for i, (e, j) in enumerate(zip(result["eager"], result["janus"])):
        assert abs(e["loss"] - j["loss"]) <= 1e-5 * max(1.0, abs(e["loss"])), f"step {i}: {e['loss']} != {j['loss']}"
        assert e["replica_calls"] == j["replica_calls"], f"step {i}: Python state differs"
        np.testing.assert_allclose(j["history"], e["history"], rtol=1e-5, err_msg=f"step {i}")
        for we, wj in zip(e["weights"], j["weights"]):
            np.testing.assert_allclose(wj, we, rtol=1e-5, atol=1e-6, err_msg=f"step {i} weights")


def test_a_step_calling_strategy_run_is_one_graph_for_every_batch():
    result = _run("outer")
    _same_as_eager(result)
    stats = result["stats"]
    assert stats["graph_calls"] >= 7 and stats["conversions"] <= 3, stats
    assert "PerReplica" in result["explain"]  # fed through its TypeSpec, not guarded by identity


def test_a_janus_step_passed_to_strategy_run_runs_as_written():
    result = _run("inner", steps=6)
    _same_as_eager(result)
    assert result["stats"]["graph_calls"] == 0 and result["stats"]["conversions"] == 0, result["stats"]
    assert "called inside strategy.run" in result["explain"]


def test_a_multi_worker_strategy_runs_graphs_without_assumptions():
    """Under a multi-worker strategy (here one worker) every call votes with the other
    workers, and the graphs carry no assertion."""
    result = _run("multiworker", steps=8)
    _same_as_eager(result)
    assert result["stats"]["graph_calls"] >= 3, (
        'of the 8 steps under the multi-worker strategy, the ones after profiling run graphs: the test must not pass '
        f'by running everything eagerly: {result["stats"]}'
    )
    assert "assertions in graph: 0" in result["explain"]


def _free_ports(n: int) -> list[int]:
    import socket

    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_two_workers_run_graphs_and_take_the_same_path_at_every_step():
    """MultiWorkerMirroredStrategy with two worker processes on loopback.  Both run graphs;
    at one step worker 1's guard misses while worker 0's holds: a graph's collectives are
    not the eager step's, so both must run that step eagerly (else they hang or fail)."""
    script = os.path.join(os.path.dirname(SCRIPT), "multiworker_train.py")
    cluster = {"worker": [f"127.0.0.1:{p}" for p in _free_ports(2)]}
    procs = []
    for index in range(2):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
                   TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}))
        procs.append(subprocess.Popen([sys.executable, script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, env=env))
    outputs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=150)
            assert p.returncode == 0, err[-3000:]
            outputs.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            p.kill()
    for out in outputs:
        np.testing.assert_allclose(out["janus"], out["eager"], rtol=1e-5)
        for we, wj in zip(out["eager_weights"], out["janus_weights"]):
            np.testing.assert_allclose(wj, we, rtol=1e-5, atol=1e-6)
        assert out["history"] == len(out["janus"])
        assert out["stats"]["graph_calls"] == 6 and out["stats"]["conversions"] == 1, out["stats"]
    np.testing.assert_allclose(outputs[0]["janus"], outputs[1]["janus"], rtol=1e-6)  # the workers agree
    assert "another worker could not run a graph at this step" in outputs[0]["explain"]
