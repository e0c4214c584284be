"""Gemma 4 chat templates: render them as vLLM does, prove they cannot leak thoughts, probe live servers.

- ``check_template(source, variant)`` renders the scenario matrix (``SCENARIOS``) in both content
  formats vLLM can pass, in a child process with limits (``specdraft.templates.limits``), and returns a
  ``TemplateFinding`` (a ``specdraft.findings.Finding``) per rule violation;
- ``compare_to_reference(ours, reference, variant)`` also renders a reference template (Google's, usually
  found by ``find_checkpoint_template(checkpoint_dir)``) and reports ``format-drift`` wherever the prompts
  differ outside the leak fixes;
- ``shipped_template(variant)`` is the path of the template specdraft ships for ``"e"`` or ``"large"``;
- ``render_chat`` is the renderer itself (transformers' own, behind vLLM's request handling);
- ``probe_server`` sends scenario requests to a running OpenAI-compatible server and scans the answers.
"""

from specdraft.templates.check import TemplateFinding, check_template, render_matrix
from specdraft.templates.probe import PROBE_REQUESTS, ProbeResult, probe_server, scan_message
from specdraft.templates.reference import (
    CheckpointVerdict,
    Comparison,
    compare_to_checkpoint,
    compare_to_reference,
    find_checkpoint_template,
)
from specdraft.templates.rendering import TemplateRenderError, TemplateSourceError, render_chat
from specdraft.templates.rules import RULES, VARIANTS, Variant
from specdraft.templates.scenarios import SCENARIOS, Scenario
from specdraft.templates.shipped import shipped_template

__all__ = [
    "CheckpointVerdict",
    "Comparison",
    "PROBE_REQUESTS",
    "ProbeResult",
    "RULES",
    "SCENARIOS",
    "Scenario",
    "TemplateFinding",
    "TemplateRenderError",
    "TemplateSourceError",
    "VARIANTS",
    "Variant",
    "check_template",
    "compare_to_checkpoint",
    "compare_to_reference",
    "find_checkpoint_template",
    "probe_server",
    "render_chat",
    "render_matrix",
    "scan_message",
    "shipped_template",
]
