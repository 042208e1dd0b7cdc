# The README's two commands: `make demo` (the main job) and `make test` (the tests).
# Both create .venv from the system python3 if it is missing and install the project into it
# (editable, with the test extra); editing pyproject.toml re-installs an existing .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export TF_CPP_MIN_LOG_LEVEL ?= 2

# Other Pythons: `make test-py3.12` (or test-py3.13) makes .venv-3.12 from pyenv's 3.12 (or
# python3.12 on PATH) and runs SUBSET there; `make test-versions` does it for VERSIONS.
VERSIONS ?= 3.12 3.13
PYENV_ROOT ?= $(shell pyenv root 2>/dev/null || echo "$$HOME/.pyenv")
python_for = $(or $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/$(1).*/bin/python))),$(shell command -v python$(1) 2>/dev/null))
# the fast subset for the other Pythons: conversion, faults, the profiler (sys.monitoring on
# 3.12+, settrace on 3.11), the GradientTape hook and python -m janus, the package layout,
# graph breaks (their functions are built from code objects and closure cells by hand), try
# statements (a block's locals read from its frame as an exception leaves it: PEP 667 on 3.13),
# tensor values specialized (a profile's branch outcomes decide how int(t) is traced first),
# Python islands (their result types come from the profile's return events), the kinds of
# values read (the protocols pass rewrites f-strings and operators, parsed anew by 3.12),
# the profiler under threads (sys.monitoring's tool ids), stdout given back (3.11's print),
# one round of the concurrency stress (no crash, eager's answers under threads: issue #39),
# del statements (a pass of their own over the AST each version parses) and the attributes
# Keras's code reads of its objects (found in each version's bytecode)
SUBSET ?= tests/test_conv_*.py tests/test_faults.py tests/test_fault_generator.py \
	tests/test_profiler.py tests/test_profiler_cli.py tests/test_hook.py tests/test_hook_beyond_tapes.py tests/test_layout.py \
	tests/test_graph_breaks.py tests/test_try.py tests/test_tensor_values.py tests/test_islands.py \
	tests/test_value_kinds.py tests/test_profiler_threads.py tests/test_giveback.py \
	tests/test_concurrency_stress.py tests/test_deletes.py tests/test_library_state.py

.PHONY: demo test test-subset test-versions wheel-check bench bench-all clean

# tensorflow-cpu (what this Makefile installed before) and tensorflow both write the
# `tensorflow` package: a venv holding tensorflow-cpu loses both before tensorflow goes in.
# The tree was the distribution `janus` before it was `janus-tf`: that one goes too.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	if $(PY) -m pip show tensorflow-cpu >/dev/null 2>&1; then \
		$(PY) -m pip uninstall -q -y tensorflow-cpu tensorflow; fi
	if $(PY) -m pip show janus >/dev/null 2>&1; then $(PY) -m pip uninstall -q -y janus; fi
	rm -rf janus.egg-info
	$(PY) -m pip install -q -e ".[test]"
	touch $@

demo: $(VENV)/.installed
	$(PY) examples/demo.py

# one pytest worker per core; -rf names each failure in the summary
test: $(VENV)/.installed
	$(PY) -m pytest -q -rf -n auto tests

test-subset: $(VENV)/.installed
	$(PY) -m pytest -q -n auto $(SUBSET)

test-py%:
	@py="$(call python_for,$*)"; \
	if [ -z "$$py" ] || ! "$$py" -c 'import sys; sys.exit("%d.%d" % sys.version_info[:2] != "$*")' 2>/dev/null; then \
		echo "Python $*: no interpreter found, skipped"; exit 0; fi; \
	echo "Python $*: $$py"; \
	$(MAKE) --no-print-directory test-subset VENV=.venv-$* PYTHON="$$py"

test-versions: $(addprefix test-py,$(VERSIONS))

# Build the sdist and, from it, the wheel (dist/), install the wheel with plain pip into a new
# venv (.venv-wheel) and run a step through janus.function from outside the checkout.
wheel-check:
	rm -rf dist .venv-build .venv-wheel
	$(PYTHON) -m venv .venv-build
	.venv-build/bin/python -m pip install -q build
	.venv-build/bin/python -m build --outdir dist .
	$(PYTHON) .ci/check_sdist.py dist/janus_tf-*.tar.gz
	$(PYTHON) -m venv .venv-wheel
	.venv-wheel/bin/python -m pip install -q --upgrade pip
	.venv-wheel/bin/python -m pip install -q dist/janus_tf-*-py3-none-any.whl
	cd "$$(mktemp -d)" && $(CURDIR)/.venv-wheel/bin/python -P $(CURDIR)/.ci/wheel_smoke.py

bench: $(VENV)/.installed
	$(PY) benchmarks/lstm_step.py

bench-all: $(VENV)/.installed
	$(PY) -m pip install -q -e ".[test,bench]"
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .venv-3.* .venv-build .venv-wheel dist build *.egg-info .pytest_cache
