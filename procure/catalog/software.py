"""Training software stacks as catalog data (``hardware_catalog/software/<stack>.yaml``).

A stack release says which parallelism and precision features exist (TP comm overlap, context
parallelism, fp8 recipes, the distributed optimizer, FSDP, interleaved pipelines, DP overlap) and
which attention kernel it runs. The model's plan search only proposes what the stack can run.

One file per stack, each release with its date and source. ``resolve_software`` picks the release
a bid runs: the one named, else the newest released on or before the date given (or the quote's
``as_of``); with no stack named, the mainstream stack of the accelerator's vendor.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from procure.catalog.software_names import ALIASES as ALIASES  # re-exported: the stack vocabulary
from procure.catalog.software_names import ATTENTION_KERNELS as ATTENTION_KERNELS
from procure.catalog.software_names import FEATURES as FEATURES
from procure.catalog.software_names import FP8_RECIPES as FP8_RECIPES
from procure.catalog.software_names import STACKS as STACKS
from procure.catalog.types import Accelerator, Sourced
from procure.errors import Diagnostic, InputError
from procure.resources import catalog_dir
from procure.sources.suggest import suggest

if TYPE_CHECKING:   # the schema is built only when the files are read, not when the cache answers
    from procure.catalog.software_schema import ReleaseEntry

SOFTWARE_FOLDER = "software"
# The mainstream training stack by accelerator vendor (what a bid without `software:` runs).
MAINSTREAM = {"NVIDIA": "megatron-core", "AMD": "primus"}
MAINSTREAM_FALLBACK = "megatron-core"


@dataclass(frozen=True)
class SoftwareStack:
    """One release of a training stack: what it can run and how well."""

    stack: str
    version: str
    released: date
    features: frozenset[str]
    attention_kernel: str            # on Hopper and later; Ampere always runs FlashAttention-2
    # Host time per layer-pass relative to the fitted launch overhead (CUDA graphs lower it).
    host_overhead_factor: float = 1.0
    # Share of ZeRO-3/FSDP parameter gathers that the stack's prefetch hides (1 = FSDP2's
    # explicit one-layer-ahead prefetch on its own stream).
    zero3_prefetch_efficiency: float = 1.0
    # Gradients reduced and held in fp32 (Megatron main grads, FSDP2 reduce_dtype fp32); NVIDIA's
    # performance recipes reduce in bf16 (grad_reduce_in_fp32 = False).
    fp32_grads: bool = True
    # fp8 runs keep the weights only in fp8 (Megatron fp8_param_gather / TE fp8 primary weights).
    fp8_params: bool = False
    # What "selective" recomputation keeps: Megatron's (everything but the attention core), or a
    # MaxText remat policy: save_dot_except_mlpwi (the Q/K/V, attention-output and MLP-output GEMM
    # results) or save_qkv_proj (only the Q/K/V projections); the rest is recomputed.
    selective_policy: str = "attention_core"
    # Bytes per logit held for the cross entropy: fp32 logits and gradient (8), or a fused
    # cross entropy on bf16 logits computing the gradient in place (Transformer Engine's: 4).
    logit_bytes: float = 8.0
    # FSDP keeps the sharded parameters in fp32 and casts them to 16 bits when it gathers them
    # (FSDP2 MixedPrecisionPolicy, FSDP1 mixed precision): no separate fp32 master copy.
    fp32_params: bool = False
    # Optimizer state bytes per parameter besides the 16-bit weights: fp32 master weights and two
    # fp32 Adam moments (12); DeepSeek-V3 keeps the moments in bf16 (8).
    optimizer_bytes: float = 12.0
    # fp8 runs cache activations in low precision for the backward (DeepSeek-V3's storage): the
    # MoE expert MLP's first GEMM output (the SwiGLU input) in fp8, the attention output in E5M6.
    fp8_activation_cache: bool = False
    sourced: Sourced = Sourced(("",), "")
    notes: str = ""

    @property
    def label(self) -> str:
        return f"{self.stack} {self.version}"

    def has(self, feature: str) -> bool:
        return feature in self.features

    def fp8_recipe(self, accel: Accelerator) -> str | None:
        """The fp8 recipe this stack runs on ``accel`` (None: it cannot run fp8 there)."""
        if "fp8" not in accel.peak_tflops:
            return None
        blackwell = accel.architecture.lower().startswith("blackwell")
        for recipe in FP8_RECIPES:
            if recipe == "mxfp8" and not blackwell:
                continue
            if recipe in self.features:
                return recipe
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"stack": self.stack, "version": self.version, "released": self.released.isoformat(),
                "features": sorted(self.features), "attention_kernel": self.attention_kernel}


def stack_year(software: SoftwareStack | None) -> str:
    """'<stack> <release year>': how the fit's record of stacks and eras names a release ('' for none)."""
    return f"{software.stack} {software.released.year}" if software is not None else ""


def _release(stack: str, e: ReleaseEntry) -> SoftwareStack:
    sources = (e.source,) if isinstance(e.source, str) else tuple(e.source)
    return SoftwareStack(
        stack=stack, version=e.version, released=e.released, features=frozenset(e.features),
        attention_kernel=e.attention_kernel, host_overhead_factor=e.host_overhead_factor,
        zero3_prefetch_efficiency=e.zero3_prefetch_efficiency, fp32_grads=e.fp32_grads,
        fp8_params=e.fp8_params, selective_policy=e.selective_policy, logit_bytes=e.logit_bytes,
        fp32_params=e.fp32_params, optimizer_bytes=e.optimizer_bytes,
        fp8_activation_cache=e.fp8_activation_cache,
        sourced=Sourced(sources, e.released.isoformat(), e.verified), notes=e.notes)


@lru_cache(maxsize=4)
def load_software(root: Path | None = None) -> dict[str, tuple[SoftwareStack, ...]]:
    """Every stack's releases, oldest first; InputError with every broken file's positions.
    The shipped stacks come from the catalog cache while their files are unchanged."""
    if root is not None:
        return _read_software(Path(root))
    from procure.catalog.cache import cached, default_roots

    return cached("software", default_roots(), lambda: _read_software(catalog_dir()))


def _read_software(root: Path) -> dict[str, tuple[SoftwareStack, ...]]:
    from procure.catalog.software_schema import StackEntry
    from procure.sources.validate import validate_document
    from procure.sources.yamlpos import read_yaml

    folder = root / SOFTWARE_FOLDER
    out: dict[str, tuple[SoftwareStack, ...]] = {}
    problems: list[Diagnostic] = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            doc = read_yaml(path)
            entry = validate_document(doc, StackEntry)
        except InputError as exc:
            problems.extend(exc.diagnostics)
            continue
        if entry.stack != path.stem:
            problems.append(Diagnostic(str(path), *doc.position(("stack",)), "id-mismatch",
                                       f"stack {entry.stack!r} must equal the file name {path.stem!r}"))
            continue
        out[entry.stack] = tuple(sorted((_release(entry.stack, r) for r in entry.releases),
                                        key=lambda s: s.released))
    if problems:
        raise InputError(problems)
    return out


def known_versions(stack: str) -> list[str]:
    return [s.version for s in load_software().get(ALIASES.get(stack, stack), ())]


def _as_date(value: Union[str, date, None]) -> date | None:
    if value is None or isinstance(value, date):
        return value
    text = str(value).strip()
    parts = [int(p) for p in text.split("-")]
    return date(parts[0], parts[1] if len(parts) > 1 else 12, parts[2] if len(parts) > 2 else 28)


def resolve_software(stack: str | None, version: str | None = None,
                     when: Union[str, date, None] = None,
                     accel: Accelerator | None = None) -> SoftwareStack:
    """The release a bid runs. ``stack`` None: the mainstream stack of ``accel``'s vendor.
    ``version`` given: that release (ValueError naming the known ones when absent); else the
    newest released on or before ``when`` (its oldest release when all are newer)."""
    catalog = load_software()
    if stack is None:
        vendor = accel.vendor if accel is not None else ""
        stack = MAINSTREAM.get(vendor, MAINSTREAM_FALLBACK)
    key = ALIASES.get(stack, stack)
    releases = catalog.get(key)
    if not releases:
        raise ValueError(f"no software stack {stack!r} in the catalog{suggest(stack, catalog)}")
    if version is not None:
        for rel in releases:
            if rel.version == str(version):
                return rel
        raise ValueError(f"{stack} has no release {version!r} in the catalog (known: "
                         f"{', '.join(r.version for r in releases)})")
    day = _as_date(when)
    if day is None:
        return releases[-1]
    eligible = [r for r in releases if r.released <= day]
    return eligible[-1] if eligible else releases[0]


def check_software(stack: str | None, version: str | None, when: str | None = None) -> None:
    """ValueError (a schema diagnostic) when the stack or the release is not in the catalog, or
    when the stated date is before the stack's first release (no release to substitute silently)."""
    catalog = load_software()
    if stack is None:
        if version is not None:
            raise ValueError("a software `version` needs its `stack`")
        return
    key = ALIASES.get(stack, stack)
    if key not in catalog:
        raise ValueError(f"unknown software stack {stack!r}{suggest(stack, list(catalog))}")
    if version is not None and str(version) not in known_versions(stack):
        raise ValueError(f"{stack} has no release {version!r} in the catalog (known: "
                         f"{', '.join(known_versions(stack))})")
    day = _as_date(when)
    first = catalog[key][0]
    if version is None and day is not None and day < first.released:
        older = sorted((rels[0].released, name) for name, rels in catalog.items()
                       if name != key and rels[0].released <= day)
        hint = (f"; stacks released by then: {', '.join(name for _, name in older)}" if older
                else "; no stack in the catalog was released by then")
        raise ValueError(f"{stack} has no release on or before {when} (its first in the catalog is "
                         f"{first.version}, released {first.released.isoformat()}){hint}")


def software_for(bid_spec: Any, workload_spec: Any, as_of: Union[str, date, None],
                 accel: Accelerator) -> SoftwareStack:
    """The release a bid runs: the bid's ``software:`` over the workload's, its date over the
    quote's ``as_of`` (specs are anything with stack/version/date attributes, or None)."""
    spec = bid_spec if bid_spec is not None else workload_spec
    stack = getattr(spec, "stack", None)
    if bid_spec is not None and stack is None and workload_spec is not None:
        stack = getattr(workload_spec, "stack", None)
    return resolve_software(stack, getattr(spec, "version", None),
                            getattr(spec, "date", None) or as_of, accel)
