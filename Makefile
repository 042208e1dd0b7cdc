# The README's two commands: `make demo` (the main job) and `make test` (the tests).
# Both create .venv from the system python3 if it is missing and install the project into it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo test bench bench-all clean

$(VENV)/.installed: setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[cpu,test]"
	touch $@

demo: $(VENV)/.installed
	$(PY) examples/demo.py

test: $(VENV)/.installed
	$(PY) -m pytest -q tests

bench: $(VENV)/.installed
	$(PY) benchmarks/lstm_step.py

bench-all: $(VENV)/.installed
	$(PY) -m pip install -q -e ".[cpu,test,bench]"
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
