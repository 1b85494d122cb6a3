"""Conditional VAEs of FedMHO's resource-constrained clients and of FedCVAE (official ``pcode/models/cvae.py`` and
``cvae_large.py``; SPEC §1.9). The class label (one-hot) conditions the encoder and the decoder; the decoder's
sigmoid output is the generated image in [0, 1].

* ``cvae_small`` picks the official per-dataset model from the input shape and class count:
  1×28×28 with 10 classes → ``CVAE_MNIST`` (MLP, latent size 2; MNIST and Fashion-MNIST), 1×28×28 with 47
  classes → ``CVAE_EMNIST`` (latent 20), 3×32×32 → ``CVAE_SVHN`` (latent 20). The latent sizes are the official
  code's defaults and the only ones consistent with Table II's FLOPs (SPEC §1.10).
* ``cvae_large`` (FedCVAE's large clients, latent 20, hidden 256): Conv3x3 p1 (C→64)-ReLU → Conv3x3 (64→128)-ReLU
  → MaxPool → Conv3x3 (128→256)-ReLU → MaxPool → FC(→256)-ReLU; the decoder mirrors it with transposed 3×3
  convolutions and two bilinear ×2 upsamplings.

Every model here is a :class:`CVAE`: ``model(x, y)`` returns ``(reconstruction, mu, logvar)``; ``model.decoder(z,
y)`` generates images from latents ``z`` (B × ``latent_size``) and integer labels ``y``, and is the only part a
client uploads (the ``cvae_decoder`` upload kind).
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..errors import ConfigError
from . import MODELS, ModelSpec


class Encoder(nn.Module):
    """``trunk`` maps x (with the one-hot label appended to the flattened pixels when ``label_first``) to
    ``hidden`` features; the μ and log-variance heads see those features, with the one-hot appended otherwise."""

    def __init__(self, trunk: nn.Module, hidden: int, num_classes: int, latent: int, label_first: bool):
        super().__init__()
        self.trunk, self.num_classes, self.label_first = trunk, num_classes, label_first
        heads_in = hidden if label_first else hidden + num_classes
        self.mu = nn.Linear(heads_in, latent)
        self.logvar = nn.Linear(heads_in, latent)

    def forward(self, x, y):
        onehot = F.one_hot(y, self.num_classes).to(x.dtype)
        if self.label_first:
            h = self.trunk(torch.cat([x.flatten(1), onehot], 1))
        else:
            h = torch.cat([self.trunk(x), onehot], 1)
        return self.mu(h), self.logvar(h)


class Decoder(nn.Module):
    """[z; onehot(y)] → ``body`` → images of ``shape`` (sigmoid, in [0, 1])."""

    def __init__(self, body: nn.Module, latent: int, num_classes: int, shape: tuple[int, int, int]):
        super().__init__()
        self.body, self.latent_size, self.num_classes, self.shape = body, latent, num_classes, tuple(shape)

    def forward(self, z, y):
        out = self.body(torch.cat([z, F.one_hot(y, self.num_classes).to(z.dtype)], 1))
        return out.view(len(z), *self.shape)


class CVAE(nn.Module):
    def __init__(self, encoder: Encoder, decoder: Decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder
        self.latent_size = decoder.latent_size

    def forward(self, x, y, noise: torch.Tensor | None = None):
        """Reparameterised pass; ``noise`` (ε, B × latent) comes from the caller's seeded generator, or is drawn
        like ``mu`` when omitted (evaluation only)."""
        mu, logvar = self.encoder(x, y)
        eps = torch.randn_like(mu) if noise is None else noise
        return self.decoder(mu + torch.exp(0.5 * logvar) * eps, y), mu, logvar


def _mlp_mnist(shape, k, latent=2, hidden=256):
    c, h, w = shape
    pixels = c * h * w
    enc = Encoder(nn.Sequential(nn.Linear(pixels + k, hidden), nn.ReLU()), hidden, k, latent, label_first=True)
    dec = Decoder(nn.Sequential(nn.Linear(latent + k, hidden), nn.ReLU(), nn.Linear(hidden, pixels), nn.Sigmoid()),
                  latent, k, shape)
    return CVAE(enc, dec)


def _conv_small(shape, k, channels, latent=20, hidden=256):
    """CVAE_SVHN (channels 8, 16, 32) and CVAE_EMNIST (8, 16): 4×4 stride-2 convolutions, mirrored."""
    c, side, _ = shape
    down, cin = [], c
    for cout in channels:
        down += [nn.Conv2d(cin, cout, 4, 2, 1), nn.ReLU()]
        cin = cout
    s = side // 2 ** len(channels)
    flat = channels[-1] * s * s
    enc = Encoder(nn.Sequential(*down, nn.Flatten(), nn.Linear(flat, hidden), nn.ReLU()), hidden, k, latent,
                  label_first=False)
    up, outs = [], [*reversed(channels[:-1]), c]
    for i, cout in enumerate(outs):
        up += [nn.ConvTranspose2d(cin, cout, 4, 2, 1), nn.Sigmoid() if i == len(outs) - 1 else nn.ReLU()]
        cin = cout
    body = nn.Sequential(nn.Linear(latent + k, hidden), nn.ReLU(), nn.Linear(hidden, flat), nn.ReLU(),
                         nn.Unflatten(1, (channels[-1], s, s)), *up)
    return CVAE(enc, Decoder(body, latent, k, shape))


def cvae_small(shape, k):
    shape = tuple(shape)
    if shape == (1, 28, 28) and k == 47:
        return _conv_small(shape, k, (8, 16))
    if shape[1:] == (28, 28):
        return _mlp_mnist(shape, k)
    if shape[1:] == (32, 32):
        return _conv_small(shape, k, (8, 16, 32))
    raise ConfigError("model", f"'cvae_small' takes 1x28x28 or 3x32x32 inputs, not {'x'.join(map(str, shape))}")


def cvae_large(shape, k, latent=20, hidden=256):
    c, side, _ = shape
    s = side // 4
    trunk = nn.Sequential(
        nn.Conv2d(c, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(128, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(256 * s * s, hidden), nn.ReLU())
    enc = Encoder(trunk, hidden, k, latent, label_first=False)
    body = nn.Sequential(
        nn.Linear(latent + k, hidden), nn.ReLU(), nn.Linear(hidden, 256 * s * s), nn.ReLU(),
        nn.Unflatten(1, (256, s, s)),
        nn.ConvTranspose2d(256, 128, 3, padding=1), nn.ReLU(), nn.Upsample(scale_factor=2, mode="bilinear"),
        nn.ConvTranspose2d(128, 64, 3, padding=1), nn.ReLU(), nn.Upsample(scale_factor=2, mode="bilinear"),
        nn.ConvTranspose2d(64, c, 3, padding=1), nn.Sigmoid())
    return CVAE(enc, Decoder(body, latent, k, shape))


MODELS.register("cvae_small", ModelSpec(
    "cvae_small", cvae_small,
    "FedMHO CVAE-small (MLP with latent 2 on 28x28/10 classes; conv with latent 20 for EMNIST and SVHN)",
    shapes=((1, 28, 28), (3, 32, 32))))
MODELS.register("cvae_large", ModelSpec(
    "cvae_large", cvae_large, "FedCVAE's CVAE-large (FedMHO pcode/models/cvae_large.py; latent 20)",
    shapes=((1, 28, 28), (3, 32, 32))))
