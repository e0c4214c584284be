"""Build, check and print the launch plan for the validated DGX Spark pairing.

Target LilaRest/gemma-4-31B-it-NVFP4-turbo (ModelOpt NVFP4, text-only), draft
mikeytag/gemma-4-E2B-it-NVFP4 (ModelOpt NVFP4), profile dgx-spark. Works without the models or
vLLM on this machine: the findings then say what stands in for them. Nothing is started.

    python examples/launch_seed_pairing.py
"""

from specdraft.planning import LaunchRequest, build_launch_plan
from specdraft.launch import render_report

request = LaunchRequest(
    target="LilaRest/gemma-4-31B-it-NVFP4-turbo",
    draft="mikeytag/gemma-4-E2B-it-NVFP4",
    profile="dgx-spark",
    num_speculative_tokens=4,
)
plan = build_launch_plan(request)

print(render_report(plan))
print()
print("speculative config:", plan.speculative.to_vllm())
print("ready to launch:", "no, see the errors above" if plan.has_errors else "yes")
