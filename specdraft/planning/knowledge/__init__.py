"""What planning knows before it looks at anything: the shipped per-release tables and what they say a
release supports, the speculative methods and speculators' formats, the GPU profiles and memory arithmetic, the
methods' step costs, and the typed values the steps hand on (``SpeculativeConfig``, ``ServePlan``). Nothing here
reads the machine; every step above may import it.
"""
