"""Leak rules: what a rendered Gemma 4 prompt must not look like.

A rule is a function decorated with ``@rule(id, fix=...)``; it reads one ``Rendering`` (the prompt
one scenario produced in one content format for one variant) and yields ``Problem``s: what is wrong
and where in the prompt. The checker turns them into ``Finding``s with an excerpt. Rule ids are
stable; they are what users grep for and what ``--json`` reports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterator

from specdraft.families.gemma4 import (
    BOS,
    CHANNEL_CLOSE,
    CHANNEL_OPEN,
    MARKER_PAIRS as PAIRS,
    ROLES,
    TEMPLATE_VARIANTS as VARIANTS,
    THINK,
    TURN_CLOSE,
    TURN_OPEN,
    TemplateVariant as Variant,
)
from specdraft.templates.problems import Problem, Rendering, problem_at_end, problems_at

EMPTY_THOUGHT = "<|channel>thought\n<channel|>"
MODEL_PROMPT = "<|turn>model\n"
CLOSERS = {close: open_ for open_, close in PAIRS.items()}
_MARKER = re.compile("|".join(re.escape(m) for m in [*PAIRS, *CLOSERS]))
WRONG_SPELLINGS = (
    "<|channel|>",  # gpt-oss (harmony) spelling, also a typo in early Gemma 4 recipes
    "<|message|>",
    "<|start|>",
    "<|end|>",
    "<start_of_turn>",  # Gemma 3
    "<end_of_turn>",
    "<|turn|>",
    "<|tool_call|>",
    "<|tool_response|>",
)


@dataclass(frozen=True)
class Rule:
    id: str
    fix: str
    check: Callable[[Rendering], Iterator[Problem]]


RULES: list[Rule] = []


def rule(rule_id: str, *, fix: str) -> Callable:
    def register(check: Callable[[Rendering], Iterator[Problem]]) -> Callable:
        RULES.append(Rule(rule_id, fix, check))
        return check

    return register


@rule("missing-bos", fix="start the template with {{ bos_token }}, exactly once (vLLM adds no BOS to chat prompts)")
def _missing_bos(r: Rendering) -> Iterator[Problem]:
    if not r.prompt.startswith(BOS):
        yield Problem("the prompt does not start with <bos>", 0, 0)
    for match in list(re.finditer(re.escape(BOS), r.prompt))[1:]:
        yield Problem("<bos> appears more than once", match.start(), match.end())


@rule(
    "thought-replayed",
    fix="strip earlier thoughts: join all text parts first, remove <|channel>...<channel|> (and the <|channel|> "
    "spelling, unclosed blocks, stray closers), drop content that still starts with a bare 'thought\\n', and never "
    "render reasoning/reasoning_content except before the tool calls of the turn in progress",
)
def _thought_replayed(r: Rendering) -> Iterator[Problem]:
    seen = set()
    for match in re.finditer(r"THOUGHT\d+", r.prompt):
        word = match.group()
        if word in r.scenario.kept_thoughts or word in seen:
            continue
        seen.add(word)
        yield Problem(f"thought text from history ({word}) is replayed into the prompt", match.start(), match.end())


@rule(
    "open-thought-channel",
    fix="end the generation prompt with <|turn>model\\n (E-series) or an empty closed block (large), and end "
    "at <tool_response|> after tool results: the model writes <|channel> itself",
)
def _open_thought_channel(r: Rendering) -> Iterator[Problem]:
    # A channel the prompt opens is never in the output: a reasoning parser that finds neither <|channel> nor
    # (skipped as a special token) <channel|> in it returns the whole thought as content.
    last_open = r.prompt.rfind(CHANNEL_OPEN)
    if last_open < 0 or r.prompt.find(CHANNEL_CLOSE, last_open) >= 0:
        return
    where = "after tool results" if r.scenario.ends_after_tool_results else "at the generation prompt"
    yield Problem(f"a thought channel is left open at the end of the prompt ({where}): the reasoning that follows "
                  "carries no <|channel> for the reasoning parser", last_open, len(r.prompt))


@rule(
    "empty-thought-block",
    fix="large models (26B-A4B/31B): end the thinking-off generation prompt with "
    "<|turn>model\\n<|channel>thought\\n<channel|>; E-series and thinking on: end with <|turn>model\\n only",
)
def _empty_thought_block(r: Rendering) -> Iterator[Problem]:
    s = r.scenario
    if not s.add_generation_prompt or s.ends_after_tool_results:
        return
    has_block = r.prompt.endswith(MODEL_PROMPT + EMPTY_THOUGHT)
    if r.variant == "large" and not s.thinking and not has_block:
        yield problem_at_end(r.prompt,
                             "thinking is off but the large-model generation prompt lacks the empty thought block")
    elif (r.variant == "e" or s.thinking) and r.prompt.endswith(EMPTY_THOUGHT):
        why = "thinking is on (the block suppresses thinking)" if s.thinking else "this is an E-series template"
        yield problem_at_end(r.prompt, f"the generation prompt ends in an empty thought block although {why}")


@rule(
    "generation-prompt",
    fix="with add_generation_prompt end in <|turn>model\\n, without it close the last turn with <turn|>\\n; after tool "
    "results end right after <tool_response|> either way (the model continues its turn)",
)
def _generation_prompt(r: Rendering) -> Iterator[Problem]:
    s, p = r.scenario, r.prompt
    if s.ends_after_tool_results:
        # with or without the generation prompt: a model turn never ends at a tool result in training
        if not p.endswith("<tool_response|>") and not p.endswith("<tool_response|>" + CHANNEL_OPEN + "thought\n"):
            yield problem_at_end(
                p, "after tool results the model continues its own turn: the prompt must end at <tool_response|>")
    elif not s.add_generation_prompt:
        if not p.endswith(TURN_CLOSE + "\n"):
            yield problem_at_end(p, "add_generation_prompt is false but the prompt does not end with a closed turn")
    elif not (p.endswith(MODEL_PROMPT) or p.endswith(MODEL_PROMPT + EMPTY_THOUGHT)):
        yield problem_at_end(p, "the generation prompt does not open a model turn (<|turn>model\\n)")


@rule("wrong-marker-spelling", fix="use Gemma 4's own markers: <|channel>, <channel|>, <|turn>, <turn|>")
def _wrong_marker_spelling(r: Rendering) -> Iterator[Problem]:
    for spelling in WRONG_SPELLINGS:
        yield from problems_at(r.prompt, spelling, f"{spelling} is not a Gemma 4 token")


@rule(
    "python-repr",
    fix="content can be a list of parts (--chat-template-content-format openai): render each part's text, "
    "never the list itself; render a null tool description as empty, never as None",
)
def _python_repr(r: Rendering) -> Iterator[Problem]:
    for match in re.finditer(r"\[?\{'type': '\w+'|\{\"type\": \"\w+\"", r.prompt):
        yield Problem("a content part is rendered as a Python/JSON value", match.start(), match.end())
        return
    # vLLM passes a tool without a description as description=None
    for match in re.finditer(re.escape('description:<|"|>None<|"|>'), r.prompt):
        yield Problem("a missing tool description is rendered as the word None", match.start(), match.end())


@rule(
    "think-switch",
    fix="switch thinking on only for the boolean true or the string \"true\" (any case), off for false / \"false\", "
    "refuse any other value, and write <|think|>\\n first in the system turn",
)
def _think_switch(r: Rendering) -> Iterator[Problem]:
    s, p = r.scenario, r.prompt
    where = p.find(THINK)
    if where >= 0 and not s.thinking:
        value = s.chat_template_kwargs.get("enable_thinking", "<omitted>")
        yield Problem(f"<|think|> is present although enable_thinking is {value!r}, which does not switch thinking on",
                      where, where + len(THINK))
    elif where < 0 and s.thinking:
        yield Problem("enable_thinking is true but <|think|> is missing", 0, 0)
    elif where >= 0 and not p.startswith(BOS + "<|turn>system\n" + THINK + "\n"):
        yield Problem("<|think|> is not the first line of the system turn", where, where + len(THINK))


@rule(
    "tool-result-turn",
    fix="render each tool result as <|tool_response>response:NAME{...}<tool_response|> inside the model turn "
    "that made the call, never as a <|turn>tool turn",
)
def _tool_result_turn(r: Rendering) -> Iterator[Problem]:
    p = r.prompt
    yield from problems_at(p, "<|turn>tool", "a tool result is rendered as a separate turn")
    for match in re.finditer(re.escape("<|tool_response>"), p):
        turn = p.rfind(TURN_OPEN, 0, match.start())
        if turn < 0 or not p.startswith(MODEL_PROMPT, turn) or p.find(TURN_CLOSE, turn, match.start()) >= 0:
            yield Problem("a tool result is rendered outside the model turn that called the tool", match.start(), match.end())


@rule(
    "tool-args-json-string",
    fix="render tool-call arguments as a mapping: call:NAME{key:<|\"|>value<|\"|>} (vLLM decodes the JSON "
    "string before rendering; never print arguments with tojson or as a string)",
)
def _tool_args_json_string(r: Rendering) -> Iterator[Problem]:
    for match in re.finditer(r"<\|tool_call>call:[\w.\-]+", r.prompt):
        after = r.prompt[match.end() : match.end() + 2]
        if not re.match(r"\{(\}|[A-Za-z_])", after):
            yield Problem("tool-call arguments are not rendered as a bare-key mapping", match.start(), match.end() + 8)


@rule(
    "unbalanced-markers",
    fix="close every <|turn>, <|channel>, <|tool>, <|tool_call> and <|tool_response> you open, without nesting "
    "one inside another of the same kind; only the final model turn may stay open for generation",
)
def _unbalanced_markers(r: Rendering) -> Iterator[Problem]:
    stack: list[tuple[str, int]] = []
    for match in _MARKER.finditer(r.prompt):
        marker, at = match.group(), match.start()
        if marker in PAIRS:
            if marker == TURN_OPEN and stack:
                yield Problem(f"{marker} opens while {stack[-1][0]} is still open", at, match.end())
                return
            if marker != TURN_OPEN and [m for m, _ in stack] != [TURN_OPEN]:
                yield Problem(f"{marker} opens outside a turn or inside another block", at, match.end())
                return
            stack.append((marker, at))
        elif not stack or PAIRS[stack[-1][0]] != marker:
            expected = PAIRS[stack[-1][0]] if stack else "nothing"
            yield Problem(f"{marker} closes nothing open (expected {expected})", at, match.end())
            return
        else:
            stack.pop()
    still_open = [m for m, _ in stack]
    may_stay_open = r.scenario.add_generation_prompt or r.scenario.ends_after_tool_results
    allowed = [[]] + ([[TURN_OPEN], [TURN_OPEN, CHANNEL_OPEN]] if may_stay_open else [])
    if still_open not in allowed:
        marker, at = stack[-1]
        yield Problem(f"{marker} is never closed", at, at + len(marker))
    if r.prompt.count('<|"|>') % 2:
        yield Problem('an odd number of <|"|> string delimiters', r.prompt.rfind('<|"|>'), len(r.prompt))


@rule("role-names", fix="render roles as system, user or model (assistant -> model, developer -> system)")
def _role_names(r: Rendering) -> Iterator[Problem]:
    for match in re.finditer(r"<\|turn>(\w*)", r.prompt):
        role = match.group(1)
        if role not in ROLES and role != "tool":
            yield Problem(f"turn role {role!r} is not a Gemma 4 role", match.start(), match.end())


@rule(
    "system-turn",
    fix="open one system turn right after <bos> when thinking is on, tools are given or the first message is "
    "system/developer; put <|think|>, the system text and every tool declaration in it",
)
def _system_turn(r: Rendering) -> Iterator[Problem]:
    s, p = r.scenario, r.prompt
    needs_system = s.thinking or bool(s.tools) or s.first_role in ("system", "developer")
    opens_system = p.startswith(BOS + "<|turn>system\n")
    if needs_system and not opens_system:
        yield Problem("the prompt does not open with a system turn", 0, min(len(p), 20))
        return
    if not needs_system and opens_system:
        yield Problem("a system turn is opened with no thinking, tools or system message", 0, 20)
    system_end = p.find(TURN_CLOSE) if opens_system else 0
    for match in re.finditer(re.escape("<|tool>"), p):
        if match.start() > system_end:
            yield Problem("a tool declaration is outside the first system turn", match.start(), match.end())


def _whitespace_relaxed(expected: str) -> re.Pattern:
    """``expected`` with any whitespace, or none, between its characters."""
    return re.compile(r"\s*".join(re.escape(char) for char in expected if not char.isspace()))


@rule(
    "content-dropped",
    fix="keep every user text, visible answer, tool call and tool result; strip only the thoughts",
)
def _content_dropped(r: Rendering) -> Iterator[Problem]:
    for expected in r.scenario.must_contain:
        if expected not in r.prompt and not _whitespace_relaxed(expected).search(r.prompt):
            yield problem_at_end(
                r.prompt, f"expected {expected!r} in the prompt; it is not there, not even with other spacing")


@rule(
    "whitespace-changed",
    fix="trim texts and join them as the string content format does: no space added before <turn|> or "
    "between markers (Google's prompt format writes `<|turn>system\\nText<turn|>`)",
)
def _whitespace_changed(r: Rendering) -> Iterator[Problem]:
    for expected in r.scenario.must_contain:
        found = None if expected in r.prompt else _whitespace_relaxed(expected).search(r.prompt)
        if found:
            yield Problem(f"expected {expected!r}, found {found.group()!r}: only the whitespace differs",
                          found.start(), found.end())


RENDER_ERROR_FIX = "the template must render this request; reject only a non-boolean enable_thinking (raise_exception)"
