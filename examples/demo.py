"""Demo: the hand-written LSTM classifier (``lstm.py``) trained eagerly, through Janus and
through ``tf.function``, side by side.

Builds the trainer three times with the same seed; its ``train_step`` also keeps Python
state (a loss history list and a step counter, as training loops do).  The second
trainer's step is wrapped with ``janus.function``, the third's with ``tf.function``;
the three train alternately, step by step.  Reports the median step time after warm-up,
the time until the first call that ran as a graph (Janus: its profiled eager calls and the
conversion; ``tf.function``: the first trace), whether the losses and the Python state
agree with eager's, and every call Janus ran eagerly, with its reason.

Exit status 1 when Janus's losses or Python state differ from eager's, or Janus cannot be
used at all (``tf.function``'s differences are shown, never the demo's failure).
"""
import argparse
import sys
import time

import numpy as np
import tensorflow as tf

import common
import lstm


class Trainer(lstm.Trainer):
    """``lstm.Trainer`` whose step also appends the loss to a Python list and counts steps."""

    def __init__(self, seed):
        super().__init__(seed)
        self.history = []
        self.steps_done = 0

    def train_step(self, tokens, labels):
        with tf.GradientTape() as tape:
            logits = self.model(tokens)
            loss = self.loss_fn(labels, logits)
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        self.history.append(loss)
        self.steps_done += 1
        return loss


def timed_step(trainer):
    start = time.perf_counter()
    loss = trainer.step()
    return loss, time.perf_counter() - start


def state_of(trainer):
    """The trainer's Python state as plain values (a symbolic tensor left in the list by a
    trace is shown as such)."""
    history = [float(h) if isinstance(h, tf.Tensor) and not tf.is_symbolic_tensor(h) else "symbolic tensor"
               for h in trainer.history]
    return {"history": history, "steps_done": trainer.steps_done}


def plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def describe_state(state, eager_state):
    history, steps = state["history"], state["steps_done"]
    symbolic = sum(1 for h in history if h == "symbolic tensor")
    entries = "1 entry" if len(history) == 1 else f"{len(history)} entries"
    traced = f" ({plural(symbolic, 'symbolic tensor')} of its traces)" if symbolic else ""
    text = f"history: {entries}{traced}, steps_done {steps}"
    return text, same_state(state, eager_state)


def same_state(state, eager_state):
    a, b = state["history"], eager_state["history"]
    return (state["steps_done"] == eager_state["steps_done"] and len(a) == len(b)
            and all(isinstance(x, float) and np.isclose(x, y, rtol=1e-4) for x, y in zip(a, b)))


def first_graph_time(times, graph_call):
    """Seconds from the first call to the end of the first call that ran as a graph."""
    return None if graph_call is None else sum(times[:graph_call + 1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10, help="steps left out of the timing")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    try:
        import janus

        jan = common.maybe_janus(Trainer(args.seed), True)
    except Exception as e:  # noqa: BLE001 - say what happened
        print(f"Janus is not usable: {type(e).__name__}: {e}")
        return 1
    eager = Trainer(args.seed)
    tff = Trainer(args.seed)
    tff.train_step = tf.function(tff.train_step)
    traces = []   # tf.function's concrete functions after each call: a new one is a (re)trace
    shapes = []   # the shape of each batch Janus's trainer drew
    draw = jan.next_batch

    def next_batch():
        batch = draw()
        shapes.append(tuple(batch[0].shape))
        return batch

    jan.next_batch = next_batch

    losses = {"eager": [], "janus": [], "tf.function": []}
    times = {"eager": [], "janus": [], "tf.function": []}
    janus_calls = []   # per Janus call: "graph", or why it ran eagerly
    profile_calls = None
    for step in range(args.steps):
        for name, trainer in (("eager", eager), ("janus", jan), ("tf.function", tff)):
            if name == "janus":
                before = janus.stats(jan.train_step)
                reasons_before = dict(janus.explain(jan.train_step).reasons)
            loss, seconds = timed_step(trainer)
            losses[name].append(loss)
            times[name].append(seconds)
            if name == "janus":
                after = janus.stats(jan.train_step)
                explanation = janus.explain(jan.train_step)
                profile_calls = explanation.function.options.profile_calls if explanation.function is not None else None
                new = [r for r, n in explanation.reasons.items() if n > reasons_before.get(r, 0)]
                if after["graph_calls"] > before["graph_calls"]:
                    janus_calls.append("graph")
                elif new:
                    janus_calls.append("; ".join(new))
                elif after["conversions"] == 0 or after["conversions"] > before["conversions"]:
                    janus_calls.append(f"profiled, before the first conversion (JANUS_PROFILE_CALLS={profile_calls})"
                                       if after["conversions"] == 0 else "profiled")
                else:
                    janus_calls.append("ran eagerly (no reason recorded)")
            if name == "tf.function":
                traces.append(tff.train_step.experimental_get_tracing_count())

    eager_state, janus_state, tff_state = state_of(eager), state_of(jan), state_of(tff)
    warm = slice(args.warmup, None)
    medians = {name: 1000 * np.median(t[warm]) for name, t in times.items()}
    janus_first = next((i for i, c in enumerate(janus_calls) if c == "graph"), None)
    first = {"eager": None, "janus": first_graph_time(times["janus"], janus_first),
             "tf.function": times["tf.function"][0]}
    same = {name: np.isclose(losses[name], losses["eager"], rtol=1e-4) for name in losses}

    print(f"LSTM classifier, {args.steps} steps (the step appends its loss to a list and counts steps); "
          f"median step time after {args.warmup} warm-up steps:")
    print(f"  {'':12s} {'step':>9s} {'speedup':>8s}  {'losses':28s} {'first graph after':22s} Python state after")
    for name in losses:
        state_text, state_same = describe_state(state_of({"eager": eager, "janus": jan, "tf.function": tff}[name]),
                                                eager_state)
        if name == "eager":
            agree, when = f"{losses[name][0]:.4f} -> {losses[name][-1]:.4f}", "(never: runs eagerly)"
        else:
            agree = "match eager" if same[name].all() else \
                f"DIFFER at {int(np.sum(~same[name]))} of {args.steps} steps"
            if name == "janus":
                when = "none" if first[name] is None else f"{first[name]:.2f} s (call {janus_first + 1})"
            else:
                when = f"{first[name]:.2f} s (first trace)"
        mark = "" if name == "eager" or state_same else "   <- differs from eager"
        print(f"  {name:12s} {medians[name]:6.2f} ms {medians['eager'] / medians[name]:7.2f}x  {agree:28s} "
              f"{when:22s} {state_text}{mark}")

    if not same_state(tff_state, eager_state):
        retraces = sorted(set(traces))
        at = ", ".join(str(traces.index(n) + 1) for n in retraces)
        print(f"tf.function ran the step's Python only while tracing ({plural(traces[-1], 'trace')}, at "
              f"{'call' if len(retraces) == 1 else 'calls'} {at}): `self.history.append(loss)` appended a "
              f"symbolic tensor and `self.steps_done += 1` counted once per trace, so its trainer's state is "
              f"not eager's; Janus defers both writes and commits them after each graph run.")
    if not same["janus"].all():
        bad = int(np.argmin(same["janus"]))
        print(f"LOSSES DIFFER at step {bad + 1}: eager {losses['eager'][bad]:.6f}, janus {losses['janus'][bad]:.6f}")
    elif same_state(janus_state, eager_state):
        print("Janus: losses match eager step by step (rtol 1e-4), and so does the Python state")
    else:
        print("JANUS'S PYTHON STATE DIFFERS from eager's")

    stats = janus.stats(jan.train_step)
    eager_calls = [(i + 1, why, shapes[i]) for i, why in enumerate(janus_calls) if why != "graph"]
    print(f"Janus: {stats['graph_calls']} of {stats['calls']} calls ran as graphs, {stats['conversions']} conversions; "
          f"its {len(eager_calls)} eager calls:")
    for call, why, shape in eager_calls:
        print(f"  call {call:3d} (tokens {shape}): {why}")
    if stats["graph_calls"] == 0:
        print("Janus ran no step as a graph: every step fell back to eager execution.")
        print(janus.explain(jan.train_step))
    ok = same["janus"].all() and same_state(janus_state, eager_state)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
