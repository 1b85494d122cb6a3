"""Provenance: what each pipeline stage depends on, derived from the code (imports.py, deps.py)."""
