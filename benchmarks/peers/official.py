"""The authors' repositories, and how the harnesses import their code (README.md of this folder).

Nothing of the official code is in this repository. Each repository is cloned by whoever runs a harness into
``$OSFL_PEERS/<folder>`` (default ``/tmp/peers``) at the commit below; :func:`official_modules` imports modules from
there for the duration of a ``with`` block and then takes them out of ``sys.modules`` again, because the
repositories use generic top-level names (``helpers``, ``models``, ``utils``, ``datafree``, ``registry``) that clash
with each other.

The only changes around the official code are *shims*, each described by one line that the harnesses write into
their records: stub modules for imports that are missing here or unused by the harness (``STUBS``), the device
(:func:`cpu_device`: ``.cuda()`` is a no-op on this CPU machine) and whatever a harness lists itself.
:func:`run_until` runs an official function up to just after a given statement and hands back its local variables,
so that an equation written inline in a long function can be evaluated by the official code itself.
"""
from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import os
import pickle
import subprocess
import sys
import textwrap
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import torch
import torch.nn as nn

DEFAULT_ROOT = "/tmp/peers"


def peers_root() -> Path:
    """Where the checkouts live: ``$OSFL_PEERS``, default ``/tmp/peers``."""
    return Path(os.environ.get("OSFL_PEERS") or DEFAULT_ROOT)


class MissingCheckout(RuntimeError):
    """An official checkout is not where the harness looks; the message is the one line to run."""


# ---------------------------------------------------------------------------------------------------- stub modules
@dataclass(frozen=True)
class Stub:
    """Modules put into ``sys.modules`` while the official code is imported and run."""
    modules: tuple[str, ...]
    build: Callable[[Path], dict[str, types.ModuleType]]  # the checkout's root -> {module name: module}
    note: str  # one line for the records

    def apply(self, root: Path) -> dict[str, types.ModuleType]:
        return self.build(root)


class _Identity(nn.Module):
    """Stands for an augmentation module: returns its input."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x, *args, **kwargs):
        return x


def _module(name: str, **attrs) -> Callable[[Path], dict[str, types.ModuleType]]:
    def build(root: Path):
        m = types.ModuleType(name)
        for k, v in attrs.items():
            setattr(m, k, v)
        return {name: m}
    return build


def _kornia(root: Path) -> dict[str, types.ModuleType]:
    aug = types.ModuleType("kornia.augmentation")
    for name in ("RandomCrop", "RandomHorizontalFlip", "RandomResizedCrop"):
        setattr(aug, name, type(name, (_Identity,), {}))
    kornia = types.ModuleType("kornia")
    kornia.augmentation = aug
    return {"kornia": kornia, "kornia.augmentation": aug}


def _six(root: Path) -> dict[str, types.ModuleType]:
    moves = _module("six.moves", cPickle=pickle)(root)["six.moves"]
    return {"six": _module("six", moves=moves)(root)["six"], "six.moves": moves}


def _msgpack(root: Path) -> dict[str, types.ModuleType]:
    return {**_module("msgpack")(root), **_module("msgpack_numpy", patch=lambda: None)(root)}


def _bare_package(name: str) -> Callable[[Path], dict[str, types.ModuleType]]:
    """The checkout's package ``name`` without running its ``__init__.py`` (its submodules import normally)."""
    def build(root: Path):
        m = types.ModuleType(name)
        m.__path__ = [str(root / name)]
        return {name: m}
    return build


KORNIA = Stub(("kornia", "kornia.augmentation"), _kornia,
              "kornia stub: augmentation.RandomCrop/RandomHorizontalFlip/RandomResizedCrop are identities "
              "(not installed; the generator's views become the generated images themselves)")
IPDB = Stub(("ipdb",), _module("ipdb", set_trace=lambda *a, **k: None), "ipdb stub (imported, never called)")
TERMCOLOR = Stub(("termcolor",), _module("termcolor", colored=lambda text, *a, **k: text),
                 "termcolor stub: colored(text) returns text (logger colours only; not installed)")
TV_MODELS_UTILS = Stub(("torchvision.models.utils",),
                       _module("torchvision.models.utils", load_state_dict_from_url=torch.hub.load_state_dict_from_url),
                       "torchvision.models.utils stub: load_state_dict_from_url = torch.hub's (module removed "
                       "from torchvision; only pretrained-weight downloads use it)")
LMDB = Stub(("lmdb",), _module("lmdb"), "lmdb stub (imported by the ImageNet/LMDB loader, unused; not installed)")
CV2 = Stub(("cv2",), _module("cv2"), "cv2 stub (imported by the ImageNet/LMDB loader, unused; not installed)")
MSGPACK = Stub(("msgpack", "msgpack_numpy"), _msgpack,
               "msgpack and msgpack_numpy stubs (tensorpack-style serialisation of the LMDB loader, unused)")
SIX = Stub(("six", "six.moves"), _six, "six stub: six.moves.cPickle = pickle (not installed)")
ICDE_HELPERS = Stub(("helpers",), _bare_package("helpers"),
                    "helpers/__init__.py not run (package created bare): it imports helpers/synthesizers.py, which "
                    "imports test_pro_e, a name helpers/utils.py of this partial release does not define")


# ---------------------------------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class Official:
    folder: str  # the checkout's folder under $OSFL_PEERS (the repository's name)
    repo: str  # owner/name on GitHub
    commit: str  # full sha of the snapshot the harnesses were written against
    what: str
    stubs: tuple[Stub, ...] = field(default=())

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repo}"

    def path(self, root: Path | None = None) -> Path:
        return (root or peers_root()) / self.folder

    def clone_command(self, root: Path | None = None) -> str:
        dest = self.path(root)
        return f"git clone {self.url} {dest} && git -C {dest} checkout {self.commit}"

    def require(self, root: Path | None = None) -> Path:
        """The checkout's path; :class:`MissingCheckout` (one line: what to clone) when it is not there."""
        dest = self.path(root)
        if not dest.is_dir() or not any(dest.iterdir()):
            raise MissingCheckout(f"official {self.repo} not found at {dest} (OSFL_PEERS={dest.parent}): run "
                                  f"`{self.clone_command(root)}`")
        return dest

    def checked_out(self, root: Path | None = None) -> str:
        """The commit the checkout is at (``git rev-parse HEAD``), ``"not checked out"`` where there is none (a record
        made without the official code, as a test's), or ``"unknown"`` when git cannot tell."""
        try:
            out = subprocess.run(["git", "-C", str(self.require(root)), "rev-parse", "HEAD"], capture_output=True,
                                 text=True, check=True)
            return out.stdout.strip()
        except MissingCheckout:
            return "not checked out"
        except (OSError, subprocess.CalledProcessError):
            return "unknown"

    def stub_notes(self) -> list[str]:
        return [s.note for s in self.stubs]

    def as_dict(self) -> dict:
        return {"repo": self.repo, "url": self.url, "commit": self.commit, "folder": self.folder}


OFFICIAL: dict[str, Official] = {o.folder: o for o in (
    Official("DENSE", "zj-jayzhang/DENSE", "237c5dda707ce179740093ebf043f1549adc8266",
             "DENSE (Zhang et al., NeurIPS 2022)", (KORNIA, IPDB)),
    Official("Co-Boosting", "rong-dai/Co-Boosting", "b95d715ebf04307192094160e49334d3ab7519f0",
             "Co-Boosting (Dai et al., ICLR 2024)", (TERMCOLOR, TV_MODELS_UTILS)),
    Official("FedMHO", "YXShi2000/FedMHO", "1f4d2f4ba4b238a4d603391695ac6331f3170ca6",
             "FedMHO (Yao et al., arXiv 2502.08518)", (LMDB, CV2, MSGPACK, SIX)),
    Official("DatasetCondensation", "VICO-UoE/DatasetCondensation", "53f63a672eab9ade02aabe6432706ef56f317d64",
             "DC / DSA / DM (Zhao & Bilen)"),
    Official("ICDE2025-FL-SA", "Jun-B0518/ICDE2025-FL-SA", "a7481f2054c60bf630b768482b23d8ed9647b6c9",
             "FedHydra's first author's partial release (a DENSE fork)", (ICDE_HELPERS,)),
    Official("fed_cvae", "ceh-2000/fed_cvae", "444b8c547abdc875ff58a54aeda023b5d2a8dc00",
             "FedCVAE-Ens / FedCVAE-KD (Heinbaugh et al., ICLR 2023)"),
    Official("otfusion", "sidak/otfusion", "eb73ad63905a8ac0b05e089e6ff8f7cbae803faf",
             "OT fusion (Singh & Jaggi, NeurIPS 2020)"),
)}


def get(name: str) -> Official:
    try:
        return OFFICIAL[name]
    except KeyError:
        raise KeyError(f"unknown official repository {name!r}; known: {', '.join(OFFICIAL)}") from None


# ---------------------------------------------------------------------------------------------------- isolation
def _top_level_names(root: Path) -> set[str]:
    """Importable top-level names a checkout provides (modules and packages at its root)."""
    names = set()
    for p in root.iterdir():
        if p.suffix == ".py":
            names.add(p.stem)
        elif p.is_dir() and (p / "__init__.py").exists():
            names.add(p.name)
    return names


def _under(module: types.ModuleType, root: Path) -> bool:
    f = getattr(module, "__file__", None)
    if not f:
        return False
    try:
        return Path(f).resolve().is_relative_to(root.resolve())
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def import_isolated(root: Path, *modules: str, stubs: tuple[Stub, ...] = ()) -> Iterator[tuple]:
    """Import ``modules`` from the folder ``root`` (first on ``sys.path``), with ``stubs`` in ``sys.modules``.

    Modules of the same top-level names already imported (another checkout's ``helpers``, say) are set aside for
    the block and put back after it. On exit ``sys.path`` is restored, and every module loaded from ``root``, every
    stub and every module under one of ``root``'s top-level names leaves ``sys.modules``; third-party modules the
    official code imported (matplotlib, sklearn, ...) stay loaded, as a second import of them could break.
    """
    root = Path(root)
    tops = _top_level_names(root)
    saved_path = list(sys.path)
    before = dict(sys.modules)
    stub_names: set[str] = set()

    def ours(name: str) -> bool:
        return name.split(".")[0] in tops or any(name == s or name.startswith(s + ".") for s in stub_names)

    for name in list(sys.modules):
        if name.split(".")[0] in tops:
            del sys.modules[name]
    for stub in stubs:
        for name, mod in stub.apply(root).items():
            stub_names.add(name)
            sys.modules[name] = mod
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    try:
        yield tuple(importlib.import_module(m) for m in modules)
    finally:
        sys.path[:] = saved_path
        sys.path_importer_cache.pop(str(root), None)
        for name in list(sys.modules):
            if name in before and sys.modules[name] is before[name]:
                continue
            mod = sys.modules[name]
            if name not in before and not (ours(name) or _under(mod, root)):
                continue  # a third-party module first imported by the official code: stays
            del sys.modules[name]
        for name, mod in before.items():
            if sys.modules.get(name) is not mod:
                sys.modules[name] = mod
        importlib.invalidate_caches()


@contextlib.contextmanager
def official_modules(name: str, *modules: str, extra_stubs: tuple[Stub, ...] = (),
                     root: Path | None = None, drop: tuple[Stub, ...] = ()) -> Iterator[tuple]:
    """``import_isolated`` on the checkout of ``OFFICIAL[name]`` with its stubs (plus ``extra_stubs``, less ``drop``:
    the modules a harness provides for real, e.g. kornia from :func:`real_kornia`)."""
    off = get(name)
    stubs = tuple(s for s in off.stubs if s not in drop) + tuple(extra_stubs)
    with import_isolated(off.require(root), *modules, stubs=stubs) as mods:
        yield mods


KORNIA_SITE_NOTE = ("kornia installed outside the venv (`pip install --no-deps --target $OSFL_PEERS/_site kornia "
                    "kornia_rs`): the official augmentations run as released")


@contextlib.contextmanager
def real_kornia(root: Path | None = None) -> Iterator[str]:
    """kornia from ``$OSFL_PEERS/_site`` at the end of ``sys.path`` for the block (after the venv); yields its
    version. :class:`MissingCheckout` (the line to run) when it is not installed there."""
    site = (root or peers_root()) / "_site"
    if not (site / "kornia").is_dir():
        raise MissingCheckout(f"kornia not found in {site}: run `pip install --no-deps --target {site} kornia "
                              "kornia_rs`")
    saved = list(sys.path)
    sys.path.append(str(site))
    try:
        import kornia

        yield kornia.__version__
    finally:
        sys.path[:] = saved


CPU_DEVICE_NOTE = ("device: tensor.cuda() and module.cuda() return self, tensor.to('cuda') stays on the CPU "
                   "(the code moves everything to CUDA unconditionally)")


@contextlib.contextmanager
def cpu_device() -> Iterator[None]:
    """``.cuda()`` and ``.to('cuda')`` as no-ops for the duration (:data:`CPU_DEVICE_NOTE`)."""
    saved = torch.Tensor.cuda, nn.Module.cuda, torch.Tensor.to
    real_to = torch.Tensor.to

    def is_cuda(d) -> bool:
        return (isinstance(d, str) and d.startswith("cuda")) or (isinstance(d, torch.device) and d.type == "cuda")

    def to(self, *args, **kwargs):
        args = tuple(a for a in args if not is_cuda(a))
        if is_cuda(kwargs.get("device")):
            kwargs.pop("device")
        return real_to(self, *args, **kwargs) if (args or kwargs) else self

    torch.Tensor.cuda = lambda self, *a, **k: self
    nn.Module.cuda = lambda self, *a, **k: self
    torch.Tensor.to = to
    try:
        yield
    finally:
        torch.Tensor.cuda, nn.Module.cuda, torch.Tensor.to = saved


# ---------------------------------------------------------------------------------------------------- run_until
class _Stop(BaseException):
    """Raised by the tracer to leave the official function once the statement of interest has run."""


class NotReached(RuntimeError):
    pass


def _statement_lines(func: Callable, after: str) -> tuple[int, int]:
    """Absolute (first, last) line of the innermost simple statement of ``func`` whose source contains ``after``
    (exactly one such statement must exist)."""
    lines, first = inspect.getsourcelines(func)
    src = textwrap.dedent("".join(lines))
    tree = ast.parse(src)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not hasattr(node, "body"):
            if after in (ast.get_source_segment(src, node) or ""):
                found.append((node.lineno + first - 1, node.end_lineno + first - 1))
    if len(found) != 1:
        raise ValueError(f"{func.__qualname__}: {len(found)} statements contain {after!r} (need exactly one)")
    return found[0]


def statement_line(func: Callable, after: str) -> int:
    """The first line of the statement :func:`run_until` would stop after (for ``path:line`` in the records)."""
    return _statement_lines(func, after)[0]


@contextlib.contextmanager
def tracing(code: types.CodeType, local: Callable) -> Iterator[None]:
    """``sys.settrace`` with ``local`` as the tracer of the frames running ``code`` (and no other), for the
    duration of the block; the previous tracer is restored on exit."""
    def glob(frame, event, arg):
        return local if frame.f_code is code else None

    old = sys.gettrace()
    sys.settrace(glob)
    try:
        yield
    finally:
        sys.settrace(old)


def run_until(func: Callable, after: str, *args, occurrence: int = 1, **kwargs) -> dict:
    """Call ``func(*args, **kwargs)`` and stop it right after the ``occurrence``-th execution of its statement
    containing the source text ``after``; return a copy of its local variables at that point.

    Implemented with ``sys.settrace`` on ``func``'s own frames only: when that frame reaches a line outside the
    statement, having executed the statement, the locals are copied and an exception (a ``BaseException``, so that
    ``except Exception`` in the official code does not swallow it) unwinds the call. :class:`NotReached` when
    ``func`` returns without executing the statement that often.
    """
    target = inspect.unwrap(func)
    code = target.__code__
    lo, hi = _statement_lines(target, after)
    state = {"inside": False, "done": 0, "locals": None}

    def local(frame, event, arg):
        if event == "return" and state["inside"] and state["done"] + 1 == occurrence:
            state["locals"] = dict(frame.f_locals)  # the statement was the function's last
        elif event == "line":
            if lo <= frame.f_lineno <= hi:
                state["inside"] = True
            elif state["inside"]:
                state["inside"] = False
                state["done"] += 1
                if state["done"] == occurrence:
                    state["locals"] = dict(frame.f_locals)
                    raise _Stop
        return local

    with tracing(code, local):
        try:
            func(*args, **kwargs)
        except _Stop:
            pass
    if state["locals"] is None:
        raise NotReached(f"{target.__qualname__} returned before executing {after!r} {occurrence} time(s)")
    return state["locals"]
