"""The pair checks of the chat template: passed, the variant the target needs, no thought-channel leak, and how it
renders against the checkpoint's own template."""

from __future__ import annotations

import shlex
from pathlib import Path

from specdraft.findings import Finding
from specdraft.planning.checks.pair_facts import PairFacts


def check_chat_template(facts: PairFacts) -> Finding:
    variant = facts.target.template_variant
    if facts.template_path is None:
        return Finding(level="warning", check="chat-template",
                       message=f"no chat template passed ({facts.template_note}); vLLM falls back to the "
                               "checkpoint's, whose thought-channel handling is unchecked",
                       hint="pass --chat-template PATH")
    if facts.template_variant and facts.template_variant != variant:
        return Finding(level="error", check="chat-template",
                       message=f"{facts.template_path} is the {facts.template_variant!r} variant but target "
                               f"{facts.target.ref} needs {variant!r} (the thinking-off generation prompt differs)",
                       hint=f"drop --chat-template to use specdraft's {variant!r} template")
    leaks = [f for f in facts.template_findings if f.level == "error"]
    if leaks:
        return Finding(level="error", check="chat-template",
                       message=f"{facts.template_path} leaks the thought channel: {leaks[0].message}"
                               + (f" (+{len(leaks) - 1} more)" if len(leaks) > 1 else ""),
                       hint=f"python -m specdraft template check {shlex.quote(str(facts.template_path))} "
                            f"--variant {variant}; or launch --allow-leaky-template")
    unchecked = [f for f in facts.template_findings if f.level == "warning"]
    if unchecked:
        return unchecked[0]
    return Finding.ok("chat-template", f"{facts.template_path} ({variant} variant)")


def check_checkpoint_template(facts: PairFacts) -> list[Finding]:
    """The template passed against the target checkpoint's own: drift is a warning, that template's leaks info."""
    compared = facts.checkpoint_template
    if compared is None:
        return []
    where = Path(compared.reference_file).name
    if compared.error:
        return [Finding(level="info", check="checkpoint-template",
                        message=f"not compared with the checkpoint's own template ({where}): {compared.error}")]
    findings = []
    if compared.drift:
        more = len(compared.drift) - 6
        shown = ", ".join(compared.drift[:6]) + (f" (+{more} more)" if more > 0 else "")
        findings.append(Finding(
            level="warning", check="template-drift",
            message=f"{facts.template_path} renders other prompts than the checkpoint's own template ({where}) "
                    f"outside the leak fixes, so the model sees prompts it was not trained on: {shown}",
            hint=f"python -m specdraft template check {shlex.quote(str(facts.template_path))} --reference "
                 f"{shlex.quote(str(Path(compared.reference_file).parent))} shows the diffs"))
    if compared.reference_rules:
        rules = ", ".join(f"{rule} ({count})" for rule, count in sorted(compared.reference_rules.items()))
        findings.append(Finding(
            level="info", check="checkpoint-template",
            message=f"the checkpoint's own template ({where}) breaks rules in the scenario matrix: {rules}; "
                    f"that is why {facts.template_path.name if facts.template_path else 'another template'} "
                    "is passed"))
    return findings
