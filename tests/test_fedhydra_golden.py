"""Golden test: re-rendering the committed FedHydra results gives the committed papers/fedhydra/reports/ and summary.json.

The render code is run on the real (committed, git-tracked) results of the quick-profile Fashion-MNIST runs and
the paper-profile column, so every change to the tables, verdicts, captions or README of the report shows up as a
diff here rather than as a silently stale report. Text artifacts (Markdown, LaTeX, JSON) must be byte-identical;
figures must exist under the same names (their bytes depend on the matplotlib version installed).
"""
from __future__ import annotations

import yaml

from osfl.papers import fedhydra

TEXT = (".md", ".tex", ".json")


def test_rerender_matches_committed_reports(repo_root, tmp_path):
    params = yaml.safe_load((repo_root / "papers" / "fedhydra" / "params.yaml").read_text())
    pipe = repo_root / "papers" / "fedhydra"
    committed = pipe / "reports"
    out = tmp_path / "fedhydra"
    # the real images of Fig. 12 come from prepared data (a DVC output); only the PNG/PDF depend on them
    fedhydra.render(params, pipe / "results", tmp_path / "no-prepared-data", out, published_root=str(pipe / "published"),
                    paper_results_root=pipe / "results" / "paper", summary=tmp_path / "summary.json")
    assert (tmp_path / "summary.json").read_bytes() == (pipe / "summary.json").read_bytes()
    names = sorted(p.name for p in committed.iterdir())
    assert sorted(p.name for p in out.iterdir()) == names
    differ = [n for n in names if n.endswith(TEXT) and (out / n).read_bytes() != (committed / n).read_bytes()]
    assert not differ, f"re-rendered reports differ from reports/fedhydra/: {differ} (run `dvc repro` in papers/fedhydra/)"
