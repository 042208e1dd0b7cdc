"""Janus: run imperative TensorFlow 2 programs as speculatively specialized graphs."""
from setuptools import find_packages, setup

setup(
    name="janus",
    version="0.1.0",
    description="Transparent, speculative conversion of imperative TensorFlow 2 programs into graphs",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["janus", "janus.*", "janus_profiler", "janus_profiler.*"]),
    python_requires=">=3.11,<3.14",
    install_requires=["gast>=0.5", "astunparse>=1.6.3", "numpy>=1.26"],
    extras_require={
        # TensorFlow is an extra so that a user who already has a GPU build keeps it;
        # the Makefile installs the CPU build, which is all this project's machines have.
        "cpu": ["tensorflow-cpu>=2.16"],
        "gpu": ["tensorflow>=2.16"],
        "test": ["pytest>=7"],
        # benchmarks/run_all.py draws its chart with matplotlib
        "bench": ["matplotlib>=3.7"],
    },
    entry_points={
        "console_scripts": ["janus-profile=janus_profiler.cli:main"],
        # how janus-profile learns whether a function converts, without importing janus
        "janus_profiler.checkers": ["janus=janus.convert.support:unsupported_reason"],
    },
    classifiers=[
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
    ],
)
