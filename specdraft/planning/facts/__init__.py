"""Step 1, facts: the only step that reads the machine. Both checkpoints, the serving vLLM (its version, flags,
hotfix reports, FA4 and Triton beside it), the chat template, the environment, a load test, and ``--method
auto``'s ranking, gathered into ``LaunchFacts``.
"""
