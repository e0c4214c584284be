"""Make an NVFP4 draft with `specdraft quantize`, read it back, and see what each GPU makes of it.

Uses the testbed's tiny random E2B-shaped draft (a few MB, with a tokenizer), so it runs on any
CPU in under a minute; with a real checkpoint only --model changes. Needs the quantize extra.

    python examples/quantize_tiny_draft.py
"""

import subprocess
import sys
import tempfile
from pathlib import Path

from specdraft.quantization import check_quantization, read_quantization
from specdraft.testbed import build_tiny_pair

with tempfile.TemporaryDirectory(prefix="specdraft-quantize-example-") as tmp:
    work = Path(tmp)
    draft = build_tiny_pair(work / "pair").draft
    out = work / "draft-nvfp4"

    quantize = [sys.executable, "-m", "specdraft", "quantize", "--model", str(draft), "--out", str(out)]
    subprocess.run(quantize + ["--dry-run"], check=True)
    subprocess.run(quantize + ["--calib-samples", "4"], check=True)

    info = read_quantization(out)
    print(f"{out.name}: {info.scheme}, quant_algo {info.quant_algo}, group {info.group_size}, "
          f"serve with --quantization {info.vllm_quantization}; kept in BF16: {', '.join(info.exclusions)}")
    for gpu, capability in (("DGX Spark GB10", "12.1"), ("H100", "9.0")):
        findings = check_quantization(info, declared="modelopt", compute_capability=capability)
        print(f"{gpu} (sm {capability}):", "; ".join(f"{f.level}: {f.message}" for f in findings) or "no findings")
