"""The scenario matrix is data: the shipped file loads, and a file that does not fit is turned away by name."""

import json
from importlib import resources

import pytest
from pydantic import ValidationError

from specdraft.templates.scenarios import SCENARIOS, TOOLS, scenarios_from


def _shipped() -> dict:
    return json.loads(resources.files("specdraft.templates").joinpath("data", "scenarios.json").read_text())


def test_the_shipped_matrix_names_each_scenario_once_and_declares_the_tools_it_names():
    assert len({s.id for s in SCENARIOS}) == len(SCENARIOS) == 41
    declared = next(s for s in SCENARIOS if s.id == "tools-declared")
    assert declared.tools == TOOLS and [t["function"]["name"] for t in TOOLS] == ["get_weather", "get_time"]
    assert next(s for s in SCENARIOS if s.id == "tool-turn-in-progress-with-reasoning").kept_thoughts == {"THOUGHT14"}


def test_a_scenario_naming_an_undeclared_tool_is_turned_away():
    document = _shipped()
    document["scenarios"][0]["tools"] = ["get_weather", "get_wether"]
    with pytest.raises(ValueError, match=r"'thinking-off' names undeclared tools \['get_wether'\]"):
        scenarios_from(document)


def test_a_scenario_id_given_twice_is_turned_away():
    document = _shipped()
    document["scenarios"].append(dict(document["scenarios"][0]))
    with pytest.raises(ValueError, match="'thinking-off' appears twice"):
        scenarios_from(document)


def test_a_tool_filed_under_another_name_is_turned_away():
    document = _shipped()
    document["tools"]["get_weather"] = document["tools"]["get_time"]
    with pytest.raises(ValueError, match="'get_weather' declares function 'get_time'"):
        scenarios_from(document)


@pytest.mark.parametrize("change", [
    lambda s: s.update(must_contians=["x"]),  # a misspelt key would silently check nothing
    lambda s: s.update(messages=[]),
    lambda s: s["messages"].append({"role": "robot", "content": "hi"}),
])
def test_a_malformed_scenario_is_turned_away(change):
    document = _shipped()
    change(document["scenarios"][0])
    with pytest.raises(ValidationError):
        scenarios_from(document)
