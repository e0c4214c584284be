"""What builds and checks specdraft but never ships with it: published vLLM release trees read from PyPI,
the readers that derive the shipped per-release tables from them, and the test bench's parts that only tests
and benchmarks use. The wheel holds ``specdraft/`` alone (setup.py); tests and ``benchmarks/`` import this
package from the repository root."""
