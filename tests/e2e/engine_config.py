"""Run in a vLLM interpreter: build vLLM's engine config for a checkpoint (what engine start does before it loads
weights, and where a Gemma 4 config that release cannot read fails), print one line ``CONFIG {json}``: ok, the
transformers imported, the head size vLLM read, or the error. usage: python engine_config.py CHECKPOINT
"""
import json
import os
import sys

record = {"ok": False}
try:
    import transformers

    record["transformers"] = transformers.__version__
    from vllm.engine.arg_utils import EngineArgs

    config = EngineArgs(model=sys.argv[1], dtype="float32", max_model_len=256,
                        skip_tokenizer_init=True).create_engine_config()
    record.update(ok=True, head_size=config.model_config.get_head_size())
except BaseException as exc:
    record["error"] = f"{type(exc).__name__}: {exc}"[:1500]
print("CONFIG " + json.dumps(record), flush=True)
os._exit(0)
