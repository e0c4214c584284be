"""Step 3, flags: the ``vllm serve`` flags, one rule per flag, each rendering a fact or a decision with its
reason; no rule decides anything.
"""
