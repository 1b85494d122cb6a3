"""Stage `fid@<run>-<part>`: FID of the data a part's decoders generate against real training images (FedMHO
Table XI), with the table's two references.

The decoders of part ``--part`` generate M labelled samples as FedMHO's server does before k-means cleaning (the
class-balanced, squared-count allocation; latents from the run's seed), M being the FedMHO server's ``samples`` for
the dataset under the profile (Table III, capped like the server's), or ``fid.samples`` when set. Against an equal
number of training images (a seeded random subset), the stage computes:

* ``fid``: the generated set (all decoders pooled, SPEC §3.5);
* ``noise_fid``: Gaussian noise N(0.5, 0.5²) clipped to [0, 1] (the table's upper bound, "Gaussian Noise");
* ``real_split_fid``: a second, disjoint subset of training images of the same size (the lower bound, "Real
  Data"; at most half the training set each).

Features come from ``fid.extractor`` (:mod:`osfl.evaluation.fid`): ``inception`` is the paper's metric and needs
downloaded weights; ``random_conv`` is the offline stand-in, named in the table's caption. Writes
results/<run>/fid/<part>.json.
"""
from __future__ import annotations

import numpy as np
import torch

from ..clients.upload import read_uploads
from ..config import RunConfig
from ..errors import ConfigError
from ..evaluation.fid import DESCRIPTIONS, check_extractor, frechet_distances
from ..generative.synthesis import allocate, decoder_from_upload, generate
from ..runconfig import load_run
from ..runtime import derive_seed, write_json
from .common import load_data, parser, require_input, run_stage

def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--part", required=True, help="the part (of generative clients) whose decoders generate")
    run_stage(_run, p, argv)


def fid_settings(cfg: RunConfig) -> tuple[str, int]:
    """(extractor, samples: ``fid.samples`` or the FedMHO server's M) from ``fid``, whose keys
    :func:`osfl.config.check_keys` has checked; a bad value fails naming it."""
    own, profile = cfg.block("fid"), cfg.profile
    extractor = own.get("extractor", "random_conv")
    check_extractor(extractor)
    samples = own.get("samples")
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int) or samples < 2):
        raise ConfigError("fid.samples", f"must be a whole number >= 2 or null (the FedMHO server's M), got {samples!r}")
    if samples is None:
        from ..methods import METHODS

        samples = METHODS.get("fedmho")(**cfg.method_settings("fedmho")).resolved(profile)["samples"]
    elif profile.max_train is not None:
        samples = min(samples, profile.max_train)
    return extractor, int(samples)


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    extractor, m = fid_settings(cfg)
    uploads = read_uploads(require_input(paths.clients / args.part, f"train@...-{args.part}"))
    decoders = [u for u in uploads if u.kind == "cvae_decoder"]
    if not decoders:
        raise ConfigError("--part", f"part {args.part!r} uploaded no decoders ({uploads[0].kind})")
    data = load_data(paths, cfg)
    x_train = data.x_train
    m = min(m, len(x_train) // 2)
    seed = cfg.seed
    gen = torch.Generator().manual_seed(derive_seed(seed, "fid", args.part))
    alloc = allocate(np.stack([u.label_histogram for u in decoders]), m)
    fake, _ = generate([decoder_from_upload(u) for u in decoders], alloc, gen)
    pick = torch.Generator().manual_seed(derive_seed(seed, "fid", "real"))
    order = torch.randperm(len(x_train), generator=pick)
    real = torch.as_tensor(np.asarray(x_train))[order[: 2 * m]].float() / 255.0
    noise = (0.5 + 0.5 * torch.randn(real[:m].shape, generator=pick)).clamp(0, 1)
    fids = frechet_distances(real[:m], {"fid": fake[:m], "noise_fid": noise, "real_split_fid": real[m:]},
                             extractor)
    out = {"part": args.part, "extractor": extractor, "features": DESCRIPTIONS[extractor], "samples": int(len(fake[:m])),
           "decoders": [u.client_id for u in decoders], **{k: round(v, 4) for k, v in fids.items()}}
    paths.results.joinpath("fid").mkdir(parents=True, exist_ok=True)
    write_json(paths.results / "fid" / f"{args.part}.json", out)
    print(f"fid ({extractor}) of part {args.part}: {fids['fid']:.2f}; Gaussian noise {fids['noise_fid']:.2f}; "
          f"real split {fids['real_split_fid']:.2f} ({out['samples']} images each)")


if __name__ == "__main__":
    main()
