"""The ``condense`` section of a params file: how each client condenses its data (OFedED SPEC §2.3, §2.7).

Defaults are the SPEC's: IPC 2 [S: Fig. 2(b)'s best]; stages of 100 / 100 / 200 steps for the 3-layer CNN's layers
v_1 / v_2 / v_3 [S], run from v_3 back to v_1; DM's image optimiser (SGD lr 1, momentum 0.5), real batch 256 per
class and DSA augmentation [P]; random initialisation [S] as N(0, 1) in the mean = std = 0.5 normalised space
[P], i.e. 0.5 + 0.5·N(0, 1) in our [0, 1] pixel space. ``layers`` names, per client architecture, the modules
whose outputs are v_1 .. v_J (the 3-layer CNN: conv1-ReLU-pool, conv2-ReLU-pool, conv3-ReLU, SPEC §2.3 [P]).
``iterations`` are steps per stage, scaled by the profile like other steps inside one server epoch.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from ..config import check_choice, check_float, check_int
from ..errors import ConfigError
from .dsa import DSA_OPS
from .matching import INITS
from ..sections import section_reader

#: v_1 .. v_J per architecture (module names); cnn3 = Co-Boosting's CNNCifar, cnn2 = DENSE's CNNMnist
DEFAULT_LAYERS = {
    "cnn3": ["features.2", "features.5", "features.7"],
    "cnn3_cpu": ["features.2", "features.5", "features.7"],
    "cnn3_bn": ["features.3", "features.7", "features.10"],
    "cnn2": ["features.3", "features.7"],
    # SPEC §2.3 [P] for Table 2: J = 4, the outputs of layer1 .. layer3 and layer4 after global average pooling
    # (give condense.iterations four entries: [P] 100, 100, 100, 200)
    "resnet18": ["layer1", "layer2", "layer3", "pool"],
}


@dataclass(frozen=True)
class Condensation:
    ipc: int = 2
    iterations: tuple[int, ...] = (100, 100, 200)  # the stage starting at v_1, v_2, v_3 (run backward)
    lr: float = 1.0
    momentum: float = 0.5
    real_batch: int = 256
    augment: tuple[str, ...] = DSA_OPS
    init: str = "noise"
    init_mean: float = 0.5
    init_std: float = 0.5
    layers: dict[str, list[str]] = field(default_factory=lambda: {k: list(v) for k, v in DEFAULT_LAYERS.items()})
    noise: float = 0.0  # Fig. 3: σ of Gaussian noise on the uploaded images (normalised units) [P]; 0 = none [S]

    KEYS = ("ipc", "iterations", "lr", "momentum", "real_batch", "augment", "init", "init_mean", "init_std", "layers",
            "noise")

    @classmethod
    def from_params(cls, section: Mapping[str, Any] | None, key: str = "condense") -> "Condensation":
        """Only what differs from the defaults; a bad value fails naming its key and what is allowed."""
        get = section_reader(cls, section, key)
        iterations = get("iterations")
        if not isinstance(iterations, (list, tuple)) or not iterations:
            raise ConfigError(f"{key}.iterations", f"must be a list of step counts >= 0, one per layer, got "
                                                   f"{iterations!r}")
        iterations = tuple(check_int(f"{key}.iterations[{j}]", i, minimum=0) for j, i in enumerate(iterations))
        augment = get("augment")
        if augment in (None, "none"):
            augment = ()
        if not isinstance(augment, (list, tuple)):
            raise ConfigError(f"{key}.augment", f"must be a list of DSA ops ({', '.join(DSA_OPS)}) or none, got "
                                                f"{augment!r}")
        augment = tuple(check_choice(f"{key}.augment", op, list(DSA_OPS)) for op in augment)
        layers = {**cls().layers, **(get("layers") or {})}
        for arch, names in layers.items():
            if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
                raise ConfigError(f"{key}.layers.{arch}", "must be a list of module names (v_1 .. v_J)")
        return cls(ipc=check_int(f"{key}.ipc", get("ipc"), minimum=1), iterations=iterations,
                   lr=check_float(f"{key}.lr", get("lr"), positive=True),
                   momentum=check_float(f"{key}.momentum", get("momentum"), minimum=0.0),
                   real_batch=check_int(f"{key}.real_batch", get("real_batch"), minimum=1), augment=augment,
                   init=check_choice(f"{key}.init", get("init"), list(INITS)),
                   init_mean=check_float(f"{key}.init_mean", get("init_mean"), minimum=0.0),
                   init_std=check_float(f"{key}.init_std", get("init_std"), minimum=0.0), layers=layers,
                   noise=check_float(f"{key}.noise", get("noise"), minimum=0.0))

    def layers_for(self, arch: str, key: str = "condense") -> list[str]:
        """v_1 .. v_J of ``arch``; fails naming the key when the params give none, or a count other than the
        stages'."""
        if arch not in self.layers:
            raise ConfigError(f"{key}.layers", f"names no layers for the clients' architecture {arch!r}; has "
                                               f"{', '.join(self.layers)}")
        names = self.layers[arch]
        if len(names) != len(self.iterations):
            raise ConfigError(f"{key}.iterations", f"gives {len(self.iterations)} stages for {arch}'s "
                                                   f"{len(names)} layers ({', '.join(names)}); give one per layer")
        return names

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["iterations"], d["augment"] = list(self.iterations), list(self.augment)
        return d
