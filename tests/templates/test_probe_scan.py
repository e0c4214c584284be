"""What the probe counts as a leak in a message a client receives."""

from specdraft.templates import scan_message


def test_a_clean_answer_has_no_leak():
    assert scan_message("The answer is 4.", []) == []


def test_a_bare_thought_label_is_a_leak():
    assert [leak.marker for leak in scan_message("thought\nadd them4", [])] == ["leading 'thought\\n'"]


def test_every_gemma4_marker_in_content_is_a_leak():
    leaks = scan_message('<|channel>thought\nx<channel|>4 <|channel|> <turn|> <|"|>', [])
    assert {"<|channel>", "<channel|>", "<|channel|>", "<turn|>", '<|"|>'} <= {leak.marker for leak in leaks}


def test_call_text_beside_parsed_tool_calls_is_a_leak():
    calls = [{"function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]
    assert [leak.marker for leak in scan_message("call:get_weather{city:Paris}", calls)] == ["call: beside tool_calls"]
    assert scan_message("call: me later", []) == []


def test_markers_inside_tool_call_arguments_are_leaks():
    calls = [{"function": {"name": "get_weather", "arguments": '{city:<|"|>Paris<|"|>}'}}]
    assert scan_message(None, calls)[0].where == "tool_calls[0].function.arguments"
