"""Dataset condensation: a client turns its data into a few synthetic images per class (OFedED's layer-wise
distribution matching, and beside it HFLDD's kernel inducing points).

* ``matching``: ``distribution_matching`` (DM, Zhao & Bilen 2023, with OFedED's backward layer-wise stages and
  every ensemble member as an embedding network) and ``LayerFeatures`` (named layers' outputs by forward hooks).
* ``dsa``: differentiable Siamese augmentation (one transform drawn per class and iteration, applied to the real and
  the synthetic images alike), drawn from an explicit generator.
* ``kip``: ``kernel_inducing_points`` (KIP, Nguyen et al. 2021, as HFLDD SPEC §1.5 and FedD3 use it): support images
  optimised so that kernel ridge regression with the closed-form fully connected NTK (``fc_ntk``) predicts the
  client's real labels; ``KIPSettings`` (the ``kip`` params section) and ``to_uint8`` (quantised for transmission).

Everything random is drawn from a ``torch.Generator`` the caller passes (the public DC/DM code seeds from the clock),
so a seed gives the same synthetic set, bit for bit, on the same device and thread count.
"""
from .dsa import DSA_OPS, dsa
from .kip import (KIPResult, KIPSettings, centred_one_hot, fc_ntk, kernel_inducing_points, kernel_inducing_points_many,
                  kip_loss, krr_predict, nngp_diag, to_uint8)
from .matching import LayerFeatures, MatchingResult, distribution_matching

__all__ = ["DSA_OPS", "dsa", "LayerFeatures", "MatchingResult", "distribution_matching", "KIPResult", "KIPSettings",
           "centred_one_hot", "fc_ntk", "kernel_inducing_points", "kernel_inducing_points_many", "kip_loss", "krr_predict",
           "nngp_diag", "to_uint8"]
