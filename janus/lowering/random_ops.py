"""TensorFlow's stateful random functions, as converted code calls them.

Each replacement does what TensorFlow's own Python wrapper does (the same argument
checks, conversions and arithmetic, in the same order), except that the kernel is the
stateless one, keyed by the next seed row of the trace's :class:`SeedStream
<janus.trace.seeds.SeedStream>`: it draws eager's numbers bitwise (see
``janus.trace.seeds``).  The v2 kernels take eager's Philox key and counter; the v1 ones
(categorical, poisson: there is no v2 form) a seed that their scramble turns into that key
and counter (``janus.trace.philox``).  An op-level seed (``seed=5``) is refused: eager continues one
Philox stream per kernel across calls, a position Janus does not know.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from janus import _tf_private
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.trace.active import current
from janus.trace.values import PyScalar

_PHILOX = 1  # the algorithm of eager's stateful kernels
_UNIFORM_DTYPES = (tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int32, tf.int64)


def _seed(seed: Any, what: str) -> tuple[tf.Tensor, tf.Tensor]:
    """Key and counter of eager's next draw (``random_seed.get_seed(None)``)."""
    _check_seed(seed, what)
    return current().seeds.draw()


def _seed_v1(seed: Any, what: str) -> tf.Tensor:
    """The ``seed`` of a v1 stateless kernel that draws eager's next draw."""
    _check_seed(seed, what)
    return current().seeds.draw_v1()


def _check_seed(seed: Any, what: str) -> None:
    if seed is not None:
        raise ConversionError(f"{what}(seed={seed!r}): an op seed continues one random stream per kernel "
                              f"across eager calls, which a graph cannot reproduce", permanent=True, code=Code.RANDOM)
    if _tf_private.global_seed() is None and _tf_private.op_determinism_enabled():
        raise ConversionError(f"{what} without a seed while op determinism is enabled (eager raises)", code=Code.RANDOM)


def _number(value: Any, what: str) -> Any:
    if isinstance(value, PyScalar):
        raise ConversionError(f"{what}: a parameter is a Python number fed to the graph (eager folds it in Python)",
                              code=Code.RANDOM)
    return value


def _shape(shape: Any) -> tf.Tensor:
    """The shape argument as TensorFlow's wrappers convert it (``shape_util.shape_tensor``)."""
    dtype = None
    if isinstance(shape, (tuple, list)):
        if not shape:
            dtype = tf.int32
        else:
            shape = tuple(map(tf.compat.dimension_value, shape))
    return tf.convert_to_tensor(shape, dtype=dtype)


def normal(shape, mean=0.0, stddev=1.0, dtype=tf.float32, seed=None, name=None):
    """``tf.random.normal``."""
    mean, stddev = _number(mean, "tf.random.normal"), _number(stddev, "tf.random.normal")
    with tf.name_scope(name or "random_normal"):
        shape_tensor = _shape(shape)
        mean_tensor = tf.convert_to_tensor(mean, dtype=dtype)
        stddev_tensor = tf.convert_to_tensor(stddev, dtype=dtype)
        key, counter = _seed(seed, "tf.random.normal")
        rnd = tf.raw_ops.StatelessRandomNormalV2(shape=shape_tensor, key=key, counter=counter, alg=_PHILOX, dtype=dtype)
        return tf.add(rnd * stddev_tensor, mean_tensor)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=tf.float32, seed=None, name=None):
    """``tf.random.truncated_normal``."""
    mean, stddev = _number(mean, "tf.random.truncated_normal"), _number(stddev, "tf.random.truncated_normal")
    with tf.name_scope(name or "truncated_normal"):
        shape_tensor = _shape(shape)
        mean_tensor = tf.convert_to_tensor(mean, dtype=dtype)
        stddev_tensor = tf.convert_to_tensor(stddev, dtype=dtype)
        key, counter = _seed(seed, "tf.random.truncated_normal")
        rnd = tf.raw_ops.StatelessTruncatedNormalV2(shape=shape_tensor, key=key, counter=counter, alg=_PHILOX,
                                                      dtype=dtype)
        return tf.add(rnd * stddev_tensor, mean_tensor)


def uniform(shape, minval=0, maxval=None, dtype=tf.float32, seed=None, name=None):
    """``tf.random.uniform`` (float and integer)."""
    minval, maxval = _number(minval, "tf.random.uniform"), _number(maxval, "tf.random.uniform")
    dtype = tf.as_dtype(dtype)
    if dtype not in _UNIFORM_DTYPES:
        raise ValueError(f"Argument `dtype` got invalid value {dtype}. Accepted dtypes are {_UNIFORM_DTYPES}.")
    if maxval is None:
        if dtype.is_integer:
            raise ValueError("Must specify maxval for integer dtype %r" % dtype)
        maxval = 1
    with tf.name_scope(name or "random_uniform"):
        shape = _shape(shape)
        minval_is_zero = isinstance(minval, int) and minval == 0
        maxval_is_one = isinstance(maxval, int) and maxval == 1
        if not minval_is_zero or not maxval_is_one or dtype.is_integer:
            minval = tf.convert_to_tensor(minval, dtype=dtype)
            maxval = tf.convert_to_tensor(maxval, dtype=dtype)
        key, counter = _seed(seed, "tf.random.uniform")
        if dtype.is_integer:
            return tf.raw_ops.StatelessRandomUniformIntV2(shape=shape, key=key, counter=counter, alg=_PHILOX,
                                                             minval=minval, maxval=maxval)
        result = tf.raw_ops.StatelessRandomUniformV2(shape=shape, key=key, counter=counter, alg=_PHILOX, dtype=dtype)
        if minval_is_zero:
            if not maxval_is_one:
                result = tf.multiply(result, maxval)
        else:
            result = tf.add(result * (maxval - minval), minval)
        return result


def shuffle(value, seed=None, name=None):
    """``tf.random.shuffle``."""
    with tf.name_scope(name or "random_shuffle"):
        key, counter = _seed(seed, "tf.random.shuffle")
        return tf.raw_ops.StatelessShuffle(value=value, key=key, counter=counter, alg=_PHILOX)


def gamma(shape, alpha, beta=None, dtype=tf.float32, seed=None, name=None):
    """``tf.random.gamma`` with a scalar ``alpha`` and ``beta`` (other shapes are refused)."""
    alpha, beta = _number(alpha, "tf.random.gamma"), _number(beta, "tf.random.gamma")
    with tf.name_scope(name or "random_gamma"):
        shape = tf.convert_to_tensor(shape, dtype=tf.int32)
        alpha = tf.convert_to_tensor(alpha, dtype=dtype)
        beta = tf.convert_to_tensor(beta if beta is not None else 1, dtype=dtype)
        if alpha.shape.rank != 0 or beta.shape.rank != 0:
            raise ConversionError("tf.random.gamma with a non-scalar alpha or beta", permanent=True, code=Code.RANDOM)
        key, counter = _seed(seed, "tf.random.gamma")
        rnd = tf.raw_ops.StatelessRandomGammaV3(shape=shape, key=key, counter=counter, alg=_PHILOX, alpha=alpha)
        return tf.maximum(np.finfo(alpha.dtype.as_numpy_dtype).tiny, rnd / beta)


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """``tf.random.categorical`` (``StatelessMultinomial`` for ``Multinomial``)."""
    with tf.name_scope(name or "categorical"):
        logits = tf.convert_to_tensor(logits, name="logits")
        dtype = tf.as_dtype(dtype) if dtype else tf.int64
        accepted_dtypes = (tf.int32, tf.int64)
        if dtype not in accepted_dtypes:
            raise ValueError(f"Argument `dtype` got invalid value {dtype}. Accepted dtypes are {accepted_dtypes}.")
        seed = _seed_v1(seed, "tf.random.categorical")
        return tf.raw_ops.StatelessMultinomial(logits=logits, num_samples=num_samples, seed=seed, output_dtype=dtype)


def poisson(shape, lam, dtype=tf.float32, seed=None, name=None):
    """``tf.random.poisson`` (``StatelessRandomPoisson`` for ``RandomPoissonV2``).

    The stateful kernel's ``shape`` is prepended to ``lam``'s shape, the stateless one's is
    the whole output shape; ``lam`` converts as the stateful op converts it (a Python
    number or list becomes float64, its rate type's default).
    """
    lam = _number(lam, "tf.random.poisson")
    with tf.name_scope(name or "random_poisson"):
        shape = tf.convert_to_tensor(shape, name="shape", dtype=tf.int32)
        seed = _seed_v1(seed, "tf.random.poisson")
        lam = tf.convert_to_tensor(lam, name="rate", dtype_hint=tf.float64)
        shape = tf.concat([shape, tf.shape(lam)], 0)
        return tf.raw_ops.StatelessRandomPoisson(shape=shape, seed=seed, lam=lam, dtype=dtype)


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """``tf.nn.dropout``: TensorFlow's own implementation, with a sampler of fed seeds.

    With ``rate == 0`` eager still draws a seed (and nothing else); so does this.
    """
    rate = _number(rate, "tf.nn.dropout")
    return _tf_private.dropout(x, rate, noise_shape, functools.partial(uniform, seed=seed),
                               lambda: _seed(seed, "tf.nn.dropout"), name)


def _image_uniform(seed: Any) -> Callable:
    return functools.partial(uniform, seed=seed)


def random_flip_left_right(image, seed=None):
    """``tf.image.random_flip_left_right``."""
    return _tf_private.random_flip(image, 1, _image_uniform(seed), "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    """``tf.image.random_flip_up_down``."""
    return _tf_private.random_flip(image, 0, _image_uniform(seed), "random_flip_up_down")


def random_brightness(image, max_delta, seed=None):
    """``tf.image.random_brightness``."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = uniform([], -max_delta, max_delta, seed=seed)
    return tf.image.adjust_brightness(image, delta)


def _factor_in_range(lower, upper, seed):
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    return uniform([], lower, upper, seed=seed)


def random_contrast(image, lower, upper, seed=None):
    """``tf.image.random_contrast``."""
    return tf.image.adjust_contrast(image, _factor_in_range(lower, upper, seed))


def random_saturation(image, lower, upper, seed=None):
    """``tf.image.random_saturation``."""
    return tf.image.adjust_saturation(image, _factor_in_range(lower, upper, seed))


def random_hue(image, max_delta, seed=None):
    """``tf.image.random_hue``."""
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = uniform([], -max_delta, max_delta, seed=seed)
    return tf.image.adjust_hue(image, delta)


def random_crop(value, size, seed=None, name=None):
    """``tf.image.random_crop``."""
    with tf.name_scope(name or "random_crop"):
        value = tf.convert_to_tensor(value)
        size = tf.convert_to_tensor(size, dtype=tf.int32)
        shape = tf.shape(value)
        check = tf.debugging.Assert(tf.reduce_all(shape >= size), ["Need value.shape >= size, got ", shape, size],
                                    summarize=1000)
        with tf.control_dependencies([check]):
            shape = tf.identity(shape)
        limit = shape - size + 1
        offset = uniform(tf.shape(shape), dtype=size.dtype, maxval=size.dtype.max, seed=seed) % limit
        return tf.slice(value, offset, size)


def _refused(what: str, why: str) -> Callable:
    def refuse(*args, **kwargs):
        raise ConversionError(f"{what} {why}", permanent=True, code=Code.RANDOM)
    return refuse


REPLACEMENTS: dict[Any, Callable] = {
    tf.random.normal: normal,
    tf.random.truncated_normal: truncated_normal,
    tf.random.uniform: uniform,
    tf.random.shuffle: shuffle,
    tf.random.gamma: gamma,
    tf.nn.dropout: dropout,
    tf.image.random_flip_left_right: random_flip_left_right,
    tf.image.random_flip_up_down: random_flip_up_down,
    tf.image.random_brightness: random_brightness,
    tf.image.random_contrast: random_contrast,
    tf.image.random_saturation: random_saturation,
    tf.image.random_hue: random_hue,
    tf.image.random_crop: random_crop,
    tf.random.categorical: categorical,
    tf.random.poisson: poisson,
    tf.random.set_seed: _refused("tf.random.set_seed", "inside the step resets eager's random state "
                                                       "while it runs"),
    tf.keras.utils.set_random_seed: _refused("tf.keras.utils.set_random_seed", "inside the step resets "
                                                                               "random state while it runs"),
}
