"""graphjit benchmarks: every figure is a ratio against hand-written NumPy measured in the same run."""
