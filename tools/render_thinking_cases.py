#!/usr/bin/env python3
"""Renders the Qwen3-VL Thinking chat template with jinja2 as transformers
does, into tests/fixtures/templates/thinking_cases.json (the prompts qvl's
native renderer must reproduce byte for byte).

How transformers renders (transformers/utils/chat_template_utils.py,
_compile_jinja_template): an ImmutableSandboxedEnvironment with
trim_blocks=True and lstrip_blocks=True, the loopcontrols extension, a
raise_exception global, and `tojson` replaced by
json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
An image part is {"type": "image"} (one <|image_pad|> before qvl expands it).

Needs Debian's python3-jinja2 only:  python3 tools/render_thinking_cases.py
"""
import json
import pathlib

import jinja2.ext
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "tests" / "fixtures" / "templates"


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise TemplateError(message)


def compile_template(source):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env.from_string(source)


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather now in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. 北京"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}


def call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


CASES = [
    {"name": "user_only", "messages": [{"role": "user", "content": "How many legs do 3 cats have?"}]},
    {
        "name": "system_and_images",
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is in the chart? "},
                                         {"type": "image"}, {"type": "text", "text": " Compare."}]},
        ],
    },
    {
        "name": "tools_system_user",
        "tools": [WEATHER],
        "messages": [{"role": "system", "content": [{"type": "text", "text": "You are "}, {"type": "text", "text": "helpful."}]},
                     {"role": "user", "content": "Weather in 北京?"}],
    },
    {
        # An earlier turn's reasoning, in its content or in reasoning_content, is dropped.
        "name": "history_reasoning_dropped",
        "messages": [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "<think>\nAdd them.\n</think>\n\n4"},
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "And this?"}]},
            {"role": "assistant", "reasoning_content": "Count the dots.", "content": "Five."},
            {"role": "user", "content": "Thanks."},
        ],
    },
    {
        # After the last user query the reasoning stays: tool-call rounds keep their thinking.
        "name": "tool_rounds_keep_reasoning",
        "tools": [WEATHER],
        "messages": [
            {"role": "user", "content": "Weather in Paris and in 北京, in celsius?"},
            {"role": "assistant", "reasoning_content": "\nTwo cities: two calls.\n\n", "content": "",
             "tool_calls": [call("get_weather", {"city": "Paris", "unit": "celsius"}),
                            call("get_weather", "{\"city\": \"北京\", \"unit\": \"celsius\"}")]},
            {"role": "tool", "content": "{\"temp\": 18}"},
            {"role": "tool", "content": [{"type": "text", "text": "map: "}, {"type": "image"}]},
            {"role": "assistant", "content": "Let me check one more.",
             "tool_calls": [call("get_weather", {"city": "Paris"})]},
            {"role": "tool", "content": "{\"temp\": 19}"},
        ],
    },
    {
        # The last message is an assistant turn: its (empty) think block is rendered, no generation prompt.
        "name": "final_assistant_without_generation_prompt",
        "add_generation_prompt": False,
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "\n\nHello!"},
        ],
    },
    {
        # A user turn that only wraps a tool response does not count as a query;
        # a system message after the first is rendered as a turn of its own.
        "name": "tool_response_user_and_late_system",
        "messages": [
            {"role": "user", "content": "Start."},
            {"role": "assistant", "content": "<think>Plan.</think>Calling."},
            {"role": "user", "content": "<tool_response>\nok\n</tool_response>"},
            {"role": "system", "content": "Be brief."},
        ],
    },
    {
        "name": "assistant_after_query_without_reasoning",
        "messages": [
            {"role": "user", "content": "Q"},
            {"role": "assistant", "content": "A1"},
            {"role": "tool", "content": "r"},
            {"role": "assistant", "reasoning_content": "", "content": "A2"},
        ],
    },
]


def main():
    source = json.loads((TEMPLATES / "qwen3vl_thinking_chat_template.json").read_text())["chat_template"]
    template = compile_template(source)
    out = []
    for case in CASES:
        add = case.get("add_generation_prompt", True)
        prompt = template.render(messages=case["messages"], tools=case.get("tools"), add_generation_prompt=add)
        out.append({**case, "add_generation_prompt": add, "tools": case.get("tools", []), "prompt": prompt})
    doc = {
        "about": "Qwen3-VL Thinking chat template (qwen3vl_thinking_chat_template.json) rendered by jinja2 "
                 "as transformers does (tools/render_thinking_cases.py). An image part renders as "
                 "<|vision_start|><|image_pad|><|vision_end|>. arguments may be an object (rendered with "
                 "tojson) or a JSON string (rendered as is).",
        "cases": out,
    }
    (TEMPLATES / "thinking_cases.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
