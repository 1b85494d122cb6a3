"""The pipelines and papers are discovered from papers/*/ (src/osfl/discover.py, issue 75): no list to edit when a
paper is added, one list for the Makefile, the render stage, the book and the tests."""
import subprocess

from osfl import discover
from osfl.stages import render


def test_the_repository_s_pipelines_and_papers_are_found(repo_root):
    assert discover.pipelines() == ["benchmark", "fedhydra", "fedmho", "hfldd", "ofeded"]
    assert discover.papers() == ["fedhydra", "fedmho", "hfldd", "ofeded"]
    names = [discover.display_name(repo_root / "papers" / p) for p in discover.papers()]
    assert names == ["FedHydra", "FedMHO", "HFLDD", "OFedED"]
    assert render.PAPERS == tuple(discover.pipelines())


def test_a_new_paper_folder_is_a_paper_without_editing_a_list(tmp_path):
    for name, meta in (("newpaper", "paper: 'NewFL: a throwaway paper (arXiv 0000.00000)'\n"),
                       ("other", "paper:\n  title: Something else\n  short: OTH\n")):
        (tmp_path / name / "published").mkdir(parents=True)
        (tmp_path / name / "dvc.yaml").write_text("stages: {}\n")
        (tmp_path / name / "published" / "artifacts.yaml").write_text(meta)
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "dvc.yaml").write_text("stages: {}\n")  # a pipeline, not a paper
    (tmp_path / "notes").mkdir()  # no dvc.yaml: neither
    assert discover.pipelines(tmp_path) == ["bench", "newpaper", "other"]
    assert discover.papers(tmp_path) == ["newpaper", "other"]
    assert discover.display_name(tmp_path / "newpaper") == "NewFL"
    assert discover.display_name(tmp_path / "other") == "OTH"


def test_the_makefile_discovers_the_same_pipelines(repo_root):
    out = subprocess.run(["make", "-s", "-C", str(repo_root), "--eval=print-papers: ; @echo $(PAPERS)",
                          "print-papers"], capture_output=True, text=True, check=True).stdout.split()
    assert out == discover.pipelines()
