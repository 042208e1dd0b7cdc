"""The sdist carries what running the tests needs (the packages, tests/ with its harness and
scripts, examples/, benchmarks/, docs/, README, LICENSE, Makefile) and no build debris."""
import sys
import tarfile

(path,) = sys.argv[1:]
with tarfile.open(path) as archive:
    names = archive.getnames()
root = names[0].split("/")[0]
members = {name[len(root) + 1:] for name in names if "/" in name}
required = ["pyproject.toml", "README.md", "LICENSE", "Makefile", "MANIFEST.in", "PKG-INFO",
            "janus/__init__.py", "janus/_requirements.py", "janus_profiler/cli.py",
            "tests/conftest.py", "tests/harness.py", "tests/scripts/steplib.py",
            "examples/demo.py", "examples/lstm.py", "benchmarks/run_all.py",
            "benchmarks/handwritten/lstm.py", "docs/architecture.md", "docs/benchmarks.png"]
missing = [name for name in required if name not in members]
debris = [name for name in members if "__pycache__" in name or name.endswith((".pyc", ".pyo"))
          or name.startswith((".venv", "dist/", "build/"))]
tests = sorted(name for name in members if name.startswith("tests/test_") and name.endswith(".py"))
assert not missing, f"{path} lacks {missing}"
assert not debris, f"{path} carries {debris[:10]}"
assert len(tests) >= 30, f"{path} has only {len(tests)} test modules"
print(f"sdist check: {len(members)} entries in {path}, {len(tests)} test modules, nothing missing")
