"""Stage `partition`: split the training set among the clients; write the partition and its report."""
from __future__ import annotations

from dataclasses import replace

from ..partition import make_partition, save_partition
from ..partition.report import partition_summary, plot_partition
from ..runconfig import load_run
from ..runtime import derive_seed, staged_dir, write_json
from .common import load_data, parser, run_stage, subset


def main(argv=None) -> None:
    run_stage(_run, parser(__doc__), argv)


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    data = load_data(paths, cfg)
    profile, seed = cfg.profile, cfg.seed
    pool = subset(len(data.y_train), profile.max_train, derive_seed(seed, "train-subset"))
    part = make_partition(data.y_train[pool], cfg.partition, cfg.clients, seed,
                          num_classes=cfg.dataset.num_classes,
                          alpha=cfg.alpha, classes_per_client=cfg.classes_per_client,
                          assignment=cfg.assignment)
    # indices into the prepared training arrays, not into the (profile-capped) pool
    part = replace(part, client_indices=[pool[idx] for idx in part.client_indices],
                   num_samples=int(len(data.y_train)))
    part.verify(data.y_train)
    paths.partition.mkdir(parents=True, exist_ok=True)
    save_partition(part, paths.partition / "partition.json")
    summary = partition_summary(part)
    summary.update({"dataset": cfg.dataset.name, "profile": profile.name, "train_pool": int(len(pool))})
    with staged_dir(paths.results / "partition") as out:  # replaces the previous folder only when complete
        write_json(out / "summary.json", summary)
        plot_partition(part.class_counts, out / "bubble",
                       title=f"{cfg.dataset.name}, {cfg.partition}, {cfg.clients} clients",
                       class_names=data.classes)
    print(f"partition: {len(part.client_indices)} clients, sizes {[len(i) for i in part.client_indices]}")


if __name__ == "__main__":
    main()
