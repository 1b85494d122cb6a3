"""The upload format: what one client sends to the server in one round.

An upload is a folder ``client_<k>/`` holding ``manifest.json`` and payload files. The manifest always has
``client_id``, ``kind``, ``n_samples``, ``label_histogram`` and ``files`` (payload name -> file name); the other
keys depend on the kind. The kinds cover the four papers without a redesign:

* ``classifier``: a trained classifier (FedAvg, DENSE, FedHydra, ...): ``arch``, ``input_shape``,
  ``num_classes`` and the ``state_dict`` payload (``model.pt``); ``local_test_acc`` when evaluated; ``inputs``
  (``{"mean", "std"}``) when the model normalises its input (:mod:`osfl.models.normalise`).
* ``cvae_decoder``: FedMHO's lightweight clients: the decoder ``state_dict`` plus the label histogram.
* ``distilled_set``: OFedED / HFLDD distilled images: ``images`` (float32 or uint8) and ``labels`` arrays.
* ``soft_labels``: HFLDD's per-client soft labels on a shared public set: ``soft_labels`` array.

An upload may carry several payloads (e.g. OFedED sends a classifier and, in its second round trip, a
distilled set). Tensors are saved with ``torch.save`` and read back with ``weights_only=True``; arrays as
``.npy``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..runtime import load_state_dict, read_json, save_state_dict, write_json

UPLOAD_KINDS = ("classifier", "cvae_decoder", "distilled_set", "soft_labels")


@dataclass
class ClientUpload:
    root: Path
    manifest: dict[str, Any]

    @property
    def client_id(self) -> int:
        return int(self.manifest["client_id"])

    @property
    def kind(self) -> str:
        return self.manifest["kind"]

    @property
    def n_samples(self) -> int:
        return int(self.manifest["n_samples"])

    @property
    def label_histogram(self) -> np.ndarray:
        return np.asarray(self.manifest["label_histogram"], dtype=np.int64)

    def payload_path(self, name: str) -> Path:
        files = self.manifest["files"]
        if name not in files:
            raise KeyError(f"upload of client {self.client_id} has no payload {name!r} (has {sorted(files)})")
        return self.root / files[name]

    def state_dict(self, name: str = "state_dict") -> dict[str, torch.Tensor]:
        return load_state_dict(self.payload_path(name))

    def array(self, name: str) -> np.ndarray:
        return np.load(self.payload_path(name))

    def build_model(self, device: torch.device | str = "cpu") -> torch.nn.Module:
        """Rebuild a ``classifier`` upload as an eval-mode module on ``device``."""
        from ..models import build_model

        if self.kind != "classifier":
            raise ValueError(f"client {self.client_id} uploaded a {self.kind}, not a classifier")
        m = build_model(self.manifest["arch"], tuple(self.manifest["input_shape"]), self.manifest["num_classes"],
                        self.manifest.get("inputs"))
        m.load_state_dict(self.state_dict())
        return m.to(device).eval()


def write_upload(
    out_dir: str | Path,
    client_id: int,
    kind: str,
    manifest: dict[str, Any],
    *,
    tensors: dict[str, dict[str, torch.Tensor]] | None = None,
    arrays: dict[str, np.ndarray] | None = None,
) -> ClientUpload:
    """Write ``out_dir/client_<k>/`` with the manifest and payloads; returns the upload."""
    if kind not in UPLOAD_KINDS:
        raise ValueError(f"unknown upload kind {kind!r}; allowed: {', '.join(UPLOAD_KINDS)}")
    for key in ("n_samples", "label_histogram"):
        if key not in manifest:
            raise ValueError(f"upload manifest needs {key!r}")
    root = Path(out_dir) / f"client_{client_id:03d}"
    root.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for name, sd in (tensors or {}).items():
        fname = "model.pt" if name == "state_dict" else f"{name}.pt"
        save_state_dict(sd, root / fname)
        files[name] = fname
    for name, arr in (arrays or {}).items():
        fname = f"{name}.npy"
        np.save(root / fname, np.ascontiguousarray(arr))
        files[name] = fname
    full = {**manifest, "client_id": client_id, "kind": kind, "files": files}
    write_json(root / "manifest.json", full)
    return ClientUpload(root, full)


def read_uploads(path: str | Path) -> list[ClientUpload]:
    """All uploads under ``path`` (one ``client_*`` folder each), sorted by client id."""
    path = Path(path)
    dirs = sorted(p for p in path.glob("client_*") if (p / "manifest.json").exists())
    if not dirs:
        raise FileNotFoundError(f"no client uploads under {path}")
    ups = [ClientUpload(d, read_json(d / "manifest.json")) for d in dirs]
    return sorted(ups, key=lambda u: u.client_id)
