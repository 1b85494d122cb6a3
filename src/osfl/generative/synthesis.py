"""Server side of generative clients (FedMHO SPEC §1.4–1.5; official ``semi_supervised.py::get_synthesis_data_list``
and ``pcode/utils/data_clean.py``).

* :func:`allocate`: a class-balanced budget of ``total`` samples (⌊total / C⌋ per class) split over the decoders
  by their squared class counts: decoder k makes ⌊w_kc · ⌊total / C⌋⌋ samples of class c with
  w_kc = n_kc² / Σ_j n_jc² (uniform over the decoders when no decoder's client holds class c).
* :func:`generate`: each decoder decodes z ~ N(0, I) (drawn from the caller's seeded generator) with the one-hot
  label; the sigmoid output is the image.
* :func:`clean` ("unsupervised data optimization"): per class, 1-cluster k-means on the flattened pixels
  (scikit-learn's ``KMeans``, as the official code), keeping the ⌊ρ · n_c⌋ samples nearest the centre.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..errors import ConfigError


def allocate(counts: np.ndarray | Sequence[Sequence[int]], total: int) -> np.ndarray:
    """``(decoders, classes)`` integer sample counts from the decoders' clients' class counts."""
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 2 or (counts < 0).any():
        raise ConfigError("synthesis.counts", "must be a (decoders, classes) array of non-negative class counts")
    if total < counts.shape[1]:
        raise ConfigError("synthesis.total", f"{total} samples cannot cover {counts.shape[1]} classes")
    per_class = total // counts.shape[1]
    sq = counts ** 2
    col = sq.sum(axis=0, keepdims=True)
    weights = np.where(col > 0, sq / np.where(col > 0, col, 1), 1.0 / counts.shape[0])
    return np.floor(weights * per_class).astype(np.int64)


@torch.no_grad()
def generate(decoders: Sequence[torch.nn.Module], allocation: np.ndarray, gen: torch.Generator,
             device: torch.device | str = "cpu", batch_size: int = 1000) -> tuple[torch.Tensor, torch.Tensor]:
    """Images (float in [0, 1]) and labels from every decoder, ``allocation[k, c]`` of class c from decoder k,
    decoder by decoder and class by class; z drawn on the CPU from ``gen``."""
    if len(decoders) != allocation.shape[0]:
        raise ConfigError("synthesis.decoders", f"{len(decoders)} decoders for {allocation.shape[0]} allocation rows")
    xs, ys = [], []
    for dec, row in zip(decoders, allocation):
        dec.eval()
        for c, n in enumerate(row.tolist()):
            if n == 0:
                continue
            z_all = torch.randn(n, dec.latent_size, generator=gen)  # one draw per (decoder, class), so the
            for start in range(0, n, batch_size):                  # batch size changes no latent
                z = z_all[start : start + batch_size].to(device)
                y = torch.full((len(z),), c, dtype=torch.long, device=device)
                xs.append(dec(z, y).float().cpu())
                ys.append(y.cpu())
    if not xs:
        raise ConfigError("synthesis.total", "the allocation asks for no sample at all")
    return torch.cat(xs), torch.cat(ys)


def clean(x: torch.Tensor, y: torch.Tensor, keep: float) -> torch.Tensor:
    """Indices (ascending) of the samples kept: per class, the ⌊keep · n_c⌋ nearest the 1-cluster k-means centre."""
    if not 0 < keep <= 1:
        raise ConfigError("clean_rate", f"{keep} must be in (0, 1]")
    from sklearn.cluster import KMeans  # imported when used: every stage importing the methods would pay 1 s

    kept = []
    flat = x.reshape(len(x), -1).double().numpy()
    for c in torch.unique(y).tolist():
        idx = torch.nonzero(y == c).flatten()
        k = int(np.floor(keep * len(idx)))
        if k == 0:
            continue
        rows = flat[idx.numpy()]
        centre = KMeans(n_clusters=1, random_state=0, n_init=1).fit(rows).cluster_centers_[0]
        dist = torch.from_numpy(np.linalg.norm(rows - centre, axis=1))
        order = torch.argsort(dist, stable=True)  # ties keep the generation order
        kept.append(idx[order[:k]])
    return torch.sort(torch.cat(kept)).values if kept else torch.zeros(0, dtype=torch.long)


def write_decoder_upload(out_dir, client_id: int, model, *, arch: str, input_shape, num_classes: int,
                         label_histogram, n_samples: int):
    """A generative client's upload (kind ``cvae_decoder``): only the decoder's weights and the label histogram;
    the encoder stays on the client (FedMHO SPEC §1.3)."""
    from ..clients.upload import write_upload

    return write_upload(out_dir, client_id, "cvae_decoder",
                        {"arch": arch, "input_shape": list(input_shape), "num_classes": int(num_classes),
                         "latent_size": int(model.latent_size), "n_samples": int(n_samples),
                         "label_histogram": [int(v) for v in label_histogram]},
                        tensors={"state_dict": model.decoder.state_dict()})


def decoder_from_upload(upload, device: torch.device | str = "cpu") -> torch.nn.Module:
    """The decoder of a ``cvae_decoder`` upload, rebuilt from its architecture name, in eval mode on ``device``."""
    from ..models import build_model

    if upload.kind != "cvae_decoder":
        raise ConfigError("methods", f"client {upload.client_id} uploaded a {upload.kind}, not a cvae_decoder")
    m = upload.manifest
    decoder = build_model(m["arch"], tuple(m["input_shape"]), m["num_classes"]).decoder
    decoder.load_state_dict(upload.state_dict())
    return decoder.to(device).eval()
