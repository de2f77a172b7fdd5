"""The suite's property tests draw the same examples on every run; `HYPOTHESIS_PROFILE=wide` searches anew.

A random draw in the suite made a landing fail on a case that the landed change had nothing to do with
(the arithmetic pass's signed zero, found by test_passes_random).  The default profile (tests/conftest.py)
is derandomized; the wide random search is a separate, documented run (README, "Property tests").
"""
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


def _drawn(profile):
    seen = []

    @profile
    @given(st.integers(0, 2 ** 31 - 1))
    def probe(n):
        seen.append(n)

    probe()
    return seen


@pytest.mark.skipif(os.environ.get("HYPOTHESIS_PROFILE", "ci") != "ci", reason="runs under another profile")
def test_the_default_profile_draws_the_same_examples_on_every_run():
    assert settings.get_current_profile_name() == "ci" and settings.default.database is None
    first, second = _drawn(settings()), _drawn(settings())
    assert first == second and len(set(first)) > 10


def test_the_wide_profile_is_a_random_search_of_more_examples():
    wide = settings.get_profile("wide")
    assert wide.max_examples > settings.get_profile("ci").max_examples and wide.deadline is None
    probe_settings = settings(wide, max_examples=30, database=None)
    first, second = _drawn(probe_settings), _drawn(probe_settings)
    assert first != second


@pytest.mark.parametrize("ci_env", ["", "true"])
def test_the_wide_profile_stays_random_where_the_environment_says_ci(ci_env):
    # Hypothesis loads its own derandomized "ci" profile where CI is set; a profile registered without a parent
    # inherited it, so the CI machine's wide run searched nothing new.  The conftest is imported in a fresh
    # process, since Hypothesis reads CI when it is first imported.
    code = ("import sys; sys.path.insert(0, 'tests'); import conftest; from hypothesis import settings; "
            "print(settings.get_profile('wide').derandomize, settings.get_profile('dev').derandomize)")
    env = dict(os.environ, CI=ci_env) if ci_env else {k: v for k, v in os.environ.items() if k != "CI"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]
