"""Step 2, decisions: pure functions of ``LaunchFacts``, one module per decision, each made once (``decide``
gathers them into ``Decisions``): parallel sizes, the speculative method and K with its schedule, the hybrid KV
manager, memory, KV dtype and attention backend, async scheduling, the MoE backend, and the pairing's traits
(and so the hotfixes it needs). Later steps read a decision; none makes one again.
"""
