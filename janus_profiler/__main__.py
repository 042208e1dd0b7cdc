"""``python -m janus_profiler script.py [args]`` -- the same as ``janus-profile``."""
from janus_profiler.cli import main

if __name__ == "__main__":
    main()
