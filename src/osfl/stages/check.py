"""Stage `check`: the whole params file validated before any other stage runs (issue 75).

DVC re-runs a stage only when a params key it lists changes, so a key that no stage lists (a typo such as
``alpah: 0.1``, or ``-S ++bogus_top=1``) used to change nothing and pass silently, and a bad ``methods`` entry
surfaced as DVC's own missing-file error after the stages before it were checked. This stage lists the whole
params file, so any change re-runs it first (``prepare`` depends on its output), and it fails in one line naming
the key and what is allowed (:func:`osfl.runconfig.load_run`: unknown keys at any level with "did you mean", unknown
methods, values out of range). Its output says only that the check passed, the same bytes for every valid file,
so a change of params re-runs nothing downstream that does not read the changed key.
"""
from __future__ import annotations

from pathlib import Path

from ..runconfig import load_run
from .common import parser, run_stage

#: the record's bytes, unchanged since the check was added (prepare depends on them); the validation is
#: :func:`osfl.runconfig.validate` today
PASSED = "params.yaml: every key known, every value valid (osfl.config.validate)\n"


def main(argv=None) -> None:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--out", default="results/params-checked.txt", help="the record that the check passed")
    run_stage(_run, p, argv)


def _run(args) -> None:
    load_run(args)  # raises the one-line ConfigError
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.is_file() or out.read_text() != PASSED:
        out.write_text(PASSED)
    print(f"check: {args.params}: every key known, every value valid")


if __name__ == "__main__":
    main()
