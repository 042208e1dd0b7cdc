"""Python strings that change between calls, fed to the graph as ``tf.string`` while only
TensorFlow reads them (one graph for every value), and specialized by value as soon as
Python needs the value (a dict lookup, a comparison, a str method, a library function that
is not TensorFlow's).  Every program is compared with eager after every call (results,
exceptions, stdout, state)."""
import re
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

import janus
from harness import case, check

WORDS = ["[start]", "[start] hola", "[start] hola que", "tal", "é ñ ü", "", "[start] hola que tal", "x y"]


def test_a_string_argument_read_by_tensorflow_alone_is_fed():
    @case
    def f(s, x):
        joined = "<" + s + " " + s + ">"  # Python's concatenation, joined by the graph
        n = tf.strings.length(joined, unit="UTF8_CHAR")
        return x * tf.cast(n, tf.float32), joined

    x = tf.constant([1.0, 2.0])
    stats = check(f, [(w, x) for w in WORDS * 2], min_graph_calls=12, rtol=0, atol=0)
    assert stats["conversions"] == 1, ("the three profiled calls saw three strings: the first conversion feeds s, "
                                       f"and its graph serves every later string: {stats}")


def test_a_returned_fed_string_is_a_python_str_again():
    prog = case(lambda s: (s + "!", tf.strings.length(s)))(janus.function)
    for w in WORDS:
        out, n = prog.fn(w)
        assert type(out) is str and out == w + "!"
        assert int(n) == len(w.encode("utf-8"))
    assert janus.stats(prog.fn)["graph_calls"] >= 4, f"three profiled calls, one graph for the rest: {janus.stats(prog.fn)}"


def _captioner(jit):
    """A model-like object whose step reads a string of its state (changed by the step and by
    the caller) and a string argument, and writes strings back to its state and a history."""
    class Captioner:
        def __init__(self):
            self.prefix = "a"
            self.w = tf.Variable([0.5, -1.0])
            self.history = []

        @jit
        def step(self, word, x):
            text = self.prefix + " " + word
            tokens = tf.strings.split(text)
            self.w.assign_add(x * tf.cast(tf.size(tokens), tf.float32))
            self.prefix = self.prefix + "b"
            self.history.append(text)
            return tf.strings.reduce_join(tokens, separator="|"), text

    c = Captioner()
    return SimpleNamespace(obj=c, fn=c.step, state=lambda: {"prefix": c.prefix, "w": c.w, "history": list(c.history)})


def test_strings_of_state_written_by_the_step_and_by_the_caller_are_fed():
    x = tf.constant([0.1, 0.2])
    calls = []
    for i, w in enumerate(WORDS * 2):
        if i == 9:
            calls.append(lambda p: setattr(p.obj, "prefix", "reset"))  # the caller changes it
        calls.append((w, x))
    stats = check(_captioner, calls, min_graph_calls=10, rtol=0, atol=0)
    assert stats["conversions"] <= 2, ("the first conversion specializes on prefix (the profile saw one value per "
                                       f"call); its miss feeds it, and the second serves every later call: {stats}")


def test_a_string_python_needs_stays_specialized():
    vocab = {"a": 1.0, "b": 2.0, "c": 3.0}

    @case
    def f(s, x):
        if s == "a":  # Python needs the value: never fed
            return x - 1.0, s.upper()
        return x * vocab[s] + len(s), f"{s}:{s}"

    x = tf.constant([1.0, 2.0])
    calls = [(s, x) for s in "abcabcabcaab"]
    stats = check(f, calls, min_graph_calls=6, rtol=0, atol=0)
    assert stats["conversions"] <= 4, ("one graph per string (3), and one conversion whose trace fed s, found its "
                                       f"value needed and was restarted specialized within itself: {stats}")


def test_the_restart_that_specializes_a_needed_string_is_explained():
    vocab = {"a": 1.0, "b": 2.0, "c": 3.0}

    @janus.function
    def f(s, x):
        return x * vocab[s]

    x = tf.constant(1.0)
    for s in "abcabcabc":
        assert float(f(s, x)) == vocab[s]
    text = str(janus.explain(f))
    assert "specialized by value (Python needs values made of them): argument 0 (a str needed while tracing)" \
        in text, text


def test_a_string_handed_to_a_library_function_not_tensorflows_is_specialized():
    @case
    def f(s, x):
        shouted = str(np.char.upper(s))  # NumPy reads it
        return tf.strings.length(shouted) + x, shouted

    calls = [(s, tf.constant(1)) for s in ["a.b", "a", "a.b"] + ["a", "b"] * 6]
    stats = check(f, calls, min_graph_calls=8, rtol=0, atol=0)
    assert stats["conversions"] <= 4, ("a graph for 'a' and one for 'b', the first found after a trace that fed s "
                                       f"and restarted specialized; a.b was profiled, never converted: {stats}")


def test_a_string_meeting_a_number_raises_as_eager():
    @case
    def f(s, k):
        return tf.strings.length(s + k)  # TypeError in eager when k is an int

    calls = [("ab", "c"), ("de", "f"), ("gh", "i"), ("jk", "l"), ("mn", "o"), ("pq", 1), ("rs", "t"), ("uv", 2),
             ("wx", "yz")]
    stats = check(f, calls, min_graph_calls=3)
    assert stats["conversions"] <= 2, ("both strings fed from the first conversion; a miss on an int k runs eagerly "
                                       f"(and raises), at most one more conversion after it: {stats}")


def test_a_string_without_utf8_bytes_is_not_fed():
    @case
    def f(s, x):
        return tf.strings.length(s) + x

    calls = [(w, tf.constant(1)) for w in ["a", "bb", "ccc", "dd", "\ud800", "e", "ff", "\ud800x", "g", "hh"]]
    check(f, calls, min_graph_calls=4)  # eager raises UnicodeEncodeError on the lone surrogates


def test_a_keras_text_vectorization_of_a_growing_sentence_is_one_graph():
    layer = tf.keras.layers.TextVectorization(max_tokens=20, output_mode="int", output_sequence_length=6)
    layer.adapt(["[start] s1 s2 s3 [end]", "s4 s5 s2"])
    table = tf.Variable(tf.random.stateless_normal([20, 3], seed=[1, 2]))

    def make(jit):
        log = []

        @jit
        def score(sentence):
            ids = layer([sentence])[:, :-1]
            return tf.reduce_sum(tf.gather(table, ids), axis=1)

        def decode(steps):
            decoded = "[start]"
            for i in range(steps):
                s = score(decoded)
                token = f"s{int(np.argmax(s.numpy()[0])) + 1}"
                decoded += " " + token
            log.append(decoded)
            return decoded

        return SimpleNamespace(fn=decode, janus_fns=[score], state=lambda: list(log))

    stats = check(make, [(n,) for n in (3, 4, 2, 5, 4, 3)], min_graph_calls=14, rtol=0, atol=0)
    assert stats["conversions"] == 1, ("the profiled calls saw three prefixes: the sentence is fed, and one graph "
                                       f"serves every prefix: {stats}")


def test_re_escape_is_called_as_it_is_and_needs_a_fed_strings_value():
    strip_chars = "!\"#$%&'()*+,-./:;<=>?@\\^_`{|}~¿"

    @case
    def f(s, text):  # keras-io's custom_standardization, and an escaped argument
        lowercase = tf.strings.lower(text)
        return tf.strings.regex_replace(lowercase, "[%s]" % re.escape(strip_chars), ""), re.escape(s)

    text = tf.constant(["Hola, ¿qué tal?", "Fine. Thanks!"])
    calls = [(s, text) for s in ["a.b", "c", "d?"] + ["a.b", "c"] * 5]
    stats = check(f, calls, min_graph_calls=8, rtol=0, atol=0)
    assert stats["conversions"] <= 3, ("the trace that fed s found re.escape needs it and restarted specialized; "
                                       f"one graph per string after the profile (3 strings): {stats}")
