"""Golden test: re-rendering the committed FedHydra results gives the committed papers/fedhydra/reports/ and summary.json.

The render code is run on the real results of the quick-profile Fashion-MNIST runs and the paper-profile column as
`make fedhydra` gives them on a fresh clone: the git-tracked records plus the cached outputs under results/ that the
shipped store holds (the live curves, whose epoch-to-epoch swing is the spread of one-seed verdicts), checked out
here from dvc-store/ by hand (no DVC lock taken beside the other tests), so every change to the tables, verdicts, captions or README of the report shows up as a
diff here rather than as a silently stale report. Text artifacts (Markdown, LaTeX, JSON) must be byte-identical;
figures must exist under the same names (their bytes depend on the matplotlib version installed).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from osfl.papers import fedhydra
from osfl.reporting.grid import Grid

TEXT = (".md", ".tex", ".json")


def checked_out_results(repo_root: Path, dest: Path) -> Path:
    """papers/fedhydra/results/ copied to ``dest`` with every cached output of its dvc.lock under results/ that
    dvc-store/ ships, as ``dvc fetch && dvc checkout --allow-missing`` lays them out."""
    pipe = repo_root / "papers" / "fedhydra"
    store = repo_root / "dvc-store" / "files" / "md5"
    shutil.copytree(pipe / "results", dest)

    def obj(md5: str) -> Path:
        return store / md5[:2] / md5[2:]

    for stage in (yaml.safe_load((pipe / "dvc.lock").read_text()) or {})["stages"].values():
        for out in stage.get("outs") or []:
            path, md5 = out["path"], out.get("md5", "")
            if not path.startswith("results/") or not md5 or not obj(md5).is_file():
                continue
            target = dest / path[len("results/"):]
            if md5.endswith(".dir"):
                for e in yaml.safe_load(obj(md5).read_text()):
                    if obj(e["md5"]).is_file():
                        (target / e["relpath"]).parent.mkdir(parents=True, exist_ok=True)
                        shutil.copyfile(obj(e["md5"]), target / e["relpath"])
            elif not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(obj(md5), target)
    return dest


def test_rerender_matches_committed_reports(repo_root, tmp_path):
    params = yaml.safe_load((repo_root / "papers" / "fedhydra" / "params.yaml").read_text())
    pipe = repo_root / "papers" / "fedhydra"
    committed = pipe / "reports"
    out = tmp_path / "fedhydra"
    # the real images of Fig. 12 come from prepared data (a DVC output); only the PNG/PDF depend on them
    results = checked_out_results(repo_root, tmp_path / "results")
    fedhydra.render(Grid.of(params), results, tmp_path / "no-prepared-data", out, published_root=str(pipe / "published"),
                    paper_results_root=results / "paper", summary=tmp_path / "summary.json",
                    benchmark_root=repo_root / "papers" / "benchmark")
    assert (tmp_path / "summary.json").read_bytes() == (pipe / "summary.json").read_bytes()
    names = sorted(p.name for p in committed.iterdir())
    assert sorted(p.name for p in out.iterdir()) == names
    differ = [n for n in names if n.endswith(TEXT) and (out / n).read_bytes() != (committed / n).read_bytes()]
    assert not differ, f"re-rendered reports differ from reports/fedhydra/: {differ} (run `dvc repro` in papers/fedhydra/)"
