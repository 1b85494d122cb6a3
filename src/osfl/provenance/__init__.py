"""Provenance: what each pipeline stage depends on, derived from the code (imports.py, deps.py); whether committed runs
were computed from one another (lineage.py); re-computing a sample of them (verify.py)."""
