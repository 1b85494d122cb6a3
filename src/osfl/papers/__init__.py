"""Per-paper artifact builders: which runs feed which table or figure, and the claims checked against them."""

#: The keys a paper's params file (papers/<paper>/params.yaml) adds to the main experiment's
#: (:data:`osfl.config.MAIN_KEYS`): key -> its allowed sub-keys, or None for a plain value or a free list.
#: :func:`osfl.config.check_keys` fails on any other key, naming the nearest known one.
PIPELINE_KEYS: dict[str, dict[str, tuple[str, ...] | None]] = {
    "fedhydra": {
        "datasets": None, "splits": None, "lambdas": None, "paper_columns": None,
        "hetero": ("datasets", "splits", "client_models", "server_model", "methods"),
        "ksweep": ("datasets", "clients", "methods"),
        "multiround": ("datasets", "splits", "methods"),
        "localcurve": ("datasets", "split", "epochs", "every"),
        "timing": ("datasets", "runs"),
        "spread": ("splits", "seeds"),
        "variants": ("fedhydra_literal", "dense_code"),
    },
    "fedmho": {
        "datasets": None, "splits": None, "seeds": None, "parts": None, "columns": None, "per_dataset": None,
        "variants": None, "sweeps": ("datasets", "parts", "variants", "fid", "clients", "clients_parts", "clients_columns"),
        "fid": ("extractor", "samples"),
        "cvae": ("epochs", "batch_size", "lr", "beta", "reduction"),
        "flops": ("transposed", "columns", "rows"),
        "samples": ("per_class", "part"),
    },
    "ofeded": {
        "datasets": None, "splits": None, "seeds": None, "columns": None, "s_columns": None,
        "condense": ("ipc", "iterations", "lr", "momentum", "real_batch", "augment", "init", "init_mean", "init_std",
                     "layers", "noise"),
        "cost": ("fedavg_rounds", "resnet"), "figure_split": None, "dp_sigmas": None, "variants": None,
        "resnet": ("model", "condense", "columns", "s_columns"),
    },
    "benchmark": {"datasets": None, "splits": None, "seeds": None, "columns": None, "xcolumns": None},
    "hfldd": {
        "datasets": None, "classes": None, "seeds": None, "public": None, "baselines": None,
        "cost": ("target", "curve_targets"),
        "clustering": ("K", "public_size", "eps"),
        "kip": ("n_images", "steps", "lr", "reg", "target_batch", "early_stop", "depth", "w_std", "b_std"),
        "hybrid": ("T", "epochs", "batch_size", "lr", "momentum", "weight_decay", "weighting", "superclients",
                   "cl_batch_size", "checkpoint_every"),
    },
}
