"""Harnesses that call the authors' released code (imported from scratch checkouts) beside ours: README.md."""
