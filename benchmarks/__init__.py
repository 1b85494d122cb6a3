"""Benchmarks and peer harnesses (a regular package: opacus installs a top-level ``benchmarks`` that would
otherwise shadow this folder for ``python -m benchmarks.peers...``)."""
