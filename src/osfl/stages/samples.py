"""Stage `samples@<dataset>`: images the generative clients' decoders make for each class (FedMHO Fig. 9).

Reads the ``cvae_decoder`` uploads of one part of a run (``samples.part``), decodes ``samples.per_class`` images per
class as the server's data generation does (the class-balanced, squared-count allocation of
:func:`osfl.generative.synthesis.allocate`, latents from the run's seed, before k-means cleaning) and writes them as
uint8 to results/<run>/samples.npz (``images``: classes × per_class × C × H × W; ``labels``), for the render stage.
"""
from __future__ import annotations

import numpy as np
import torch

from ..clients.upload import read_uploads
from ..errors import ConfigError
from ..generative.synthesis import allocate, decoder_from_upload, generate
from ..runconfig import load_run
from ..runtime import derive_seed, staged_dir
from .common import parser, require_input, run_stage


def main(argv=None) -> None:
    run_stage(_run, parser(__doc__), argv)


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    spec = cfg.dataset
    own = cfg.block("samples")
    part, per_class = own.get("part"), own.get("per_class", 8)
    if isinstance(per_class, bool) or not isinstance(per_class, int) or per_class < 1:
        raise ConfigError("samples.per_class", f"must be a whole number >= 1, got {per_class!r}")
    if not isinstance(part, str) or not part:
        raise ConfigError("samples.part", "must name a part of generative clients (e.g. cvae_small)")
    uploads = read_uploads(require_input(paths.clients / part, f"train@...-{part}"))
    decoders = [u for u in uploads if u.kind == "cvae_decoder"]
    if not decoders:
        raise ConfigError("samples.part", f"part {part!r} uploaded no decoders ({uploads[0].kind})")
    C = spec.num_classes
    # a budget of 2·per_class per class: the allocation's floors never leave a class with fewer than per_class
    alloc = allocate(np.stack([u.label_histogram for u in decoders]), 2 * per_class * C)
    gen = torch.Generator().manual_seed(derive_seed(cfg.seed, "samples", part))
    x, y = generate([decoder_from_upload(u) for u in decoders], alloc, gen)
    images = np.zeros((C, per_class, *spec.shape), dtype=np.uint8)
    for c in range(C):
        xc = x[y == c][:per_class]
        images[c, : len(xc)] = (xc.clamp(0, 1) * 255).round().to(torch.uint8).numpy()
    with staged_dir(paths.results / "samples") as out:
        np.savez_compressed(out / "samples.npz", images=images, labels=np.arange(C),
                            decoders=np.asarray([u.client_id for u in decoders]))
    print(f"samples: {per_class} per class x {C} classes from {len(decoders)} decoders of part {part}")


if __name__ == "__main__":
    main()
