"""Implementation of the public API: the pipeline, conversion and its cache."""
