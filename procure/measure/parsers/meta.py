"""StragglerAnalysis run metadata (``meta-*.yaml``): world size and parallel sizes.

The flat ``key: value`` lines are read without a YAML library (the measure core stays free of
yaml). The world size is the GPU count of the matching trace (``trace-*`` next to it).
"""

from __future__ import annotations

import re

from procure.measure.normalize import parse_number
from procure.measure.samples import Parsed

_LINE = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*:\s*(.*?)\s*$")


def parse(text: str, name: str = "") -> Parsed:
    meta: dict[str, object] = {}
    for line in text.splitlines():
        m = _LINE.match(line.split("#", 1)[0])
        if m:
            value = parse_number(m.group(2))
            meta[m.group(1)] = int(value) if value is not None and value.is_integer() else (
                value if value is not None else m.group(2).strip("'\""))
    world = meta.get("world_size")
    gpus = world if isinstance(world, int) and world > 0 else None
    parallel = ", ".join(f"{k.removesuffix('_size')}={meta[k]}" for k in
                         ("dp_size", "pp_size", "tp_size", "vpp_size", "dsp_size") if k in meta)
    parsed = Parsed(format="straggler-meta", gpus=gpus,
                    notes=[f"run metadata ({parallel or 'no parallel sizes'}): no step times"])
    parsed.info["meta"] = meta
    return parsed
