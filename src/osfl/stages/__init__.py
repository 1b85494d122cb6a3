"""Thin command-line entry points, one per DVC stage: ``python -m osfl.stages.<stage>``.

Each parses its arguments, validates the whole parameter set first (one line on error, exit code 2), then calls
library code. Logic lives in the library packages, not here.
"""
