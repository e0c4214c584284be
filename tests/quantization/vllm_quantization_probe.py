"""Run inside a vLLM interpreter: how does this vLLM resolve each checkpoint's quantization?

stdin: a JSON list of {"model", "declared", "prefixes"}; stdout (last line): a JSON list of
{"quantization", "config_class", "excluded": {prefix: bool}} or {"error": "..."} per case.
Only configuration is built (ModelConfig, get_quant_config); no weights are loaded, no kernel chosen.
"""

import json
import sys

from vllm.config import LoadConfig, ModelConfig
from vllm.model_executor.model_loader.weight_utils import get_quant_config

results = []
for case in json.load(sys.stdin):
    result = {}
    try:
        model_config = ModelConfig(model=case["model"], tokenizer=case["model"], quantization=case["declared"])
        result["quantization"] = model_config.quantization
        quant_config = get_quant_config(model_config, LoadConfig())
        result["config_class"] = type(quant_config).__name__
        if hasattr(quant_config, "is_layer_excluded"):  # ModelOpt configs
            result["excluded"] = {prefix: bool(quant_config.is_layer_excluded(prefix)) for prefix in case["prefixes"]}
    except Exception as err:  # noqa: BLE001 - the error text is the result
        result["error"] = f"{type(err).__name__}: {err}"
    results.append(result)
print(json.dumps(results))
