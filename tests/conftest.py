"""Shared pytest setup: make tests/<package>/ helper modules importable; hypothesis profile."""
import os
import sys

from hypothesis import settings

for sub in ("eager", "graph_runtime", "tracing", "autograph", "end_to_end"):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), sub))

settings.register_profile("ci", deadline=None, max_examples=40)
settings.register_profile("dev", deadline=None, max_examples=20)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
