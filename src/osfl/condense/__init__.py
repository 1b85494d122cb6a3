"""Dataset condensation: a client turns its data into a few synthetic images per class (OFedED's layer-wise
distribution matching; HFLDD's kernel inducing points will live beside it).

* ``matching``: ``distribution_matching`` (DM, Zhao & Bilen 2023, with OFedED's backward layer-wise stages and
  every ensemble member as an embedding network) and ``LayerFeatures`` (named layers' outputs by forward hooks).
* ``dsa``: differentiable Siamese augmentation (one transform drawn per class and iteration, applied to the real and
  the synthetic images alike), drawn from an explicit generator.

Everything random is drawn from a ``torch.Generator`` the caller passes (the public DC/DM code seeds from the clock),
so a seed gives the same synthetic set, bit for bit, on the same device and thread count.
"""
from .dsa import DSA_OPS, dsa
from .matching import LayerFeatures, MatchingResult, distribution_matching

__all__ = ["DSA_OPS", "dsa", "LayerFeatures", "MatchingResult", "distribution_matching"]
