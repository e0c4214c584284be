"""Run in a vLLM interpreter: what engine start does with a checkpoint before serving, without a forward pass:
build vLLM's engine config (where vLLM 0.19-0.27 fail on a Gemma 4 config read with transformers 5.15.0 or later),
then the model's modules (where 0.32.0 and later fail on one read with a transformers before 5.15.0; no weights
are loaded: loading ends in torch.accelerator.empty_cache(), which a CPU-only torch refuses outside vLLM's worker). Prints
one line ``CONFIG {json}``: ok, the transformers imported, the head size vLLM read, the step reached, or the error.
usage: python engine_config.py CHECKPOINT
"""
import json
import os
import sys
import tempfile

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
record = {"ok": False, "step": "import"}
try:
    import transformers

    record["transformers"] = transformers.__version__
    from vllm.config import set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.model_loader.utils import initialize_model

    record["step"] = "engine config"
    config = EngineArgs(model=sys.argv[1], dtype="float32", enforce_eager=True, max_model_len=256,
                        skip_tokenizer_init=True).create_engine_config()
    record.update(step="model", head_size=config.model_config.get_head_size())
    with set_current_vllm_config(config):
        init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                     distributed_init_method=f"file://{tempfile.mktemp()}")
        initialize_model_parallel(1, 1)
        initialize_model(vllm_config=config)
    record.update(ok=True, step="done")
except BaseException as exc:
    record["error"] = f"{type(exc).__name__}: {exc}"[:1500]
print("CONFIG " + json.dumps(record), flush=True)
os._exit(0)
