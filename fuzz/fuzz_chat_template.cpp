// libFuzzer target: the chat template (src/tokenizer/chat_template.*) on
// arbitrary conversations and tool definitions, and the Python-style JSON
// writer (py_json.h) that renders each tool. The input is read as lines, so
// the corpus stays readable and every input is a conversation:
//   S|U|A|T<text>   a new system / user / assistant / tool message with one text part
//   R<role>         a new message with any role
//   +<text>         another text part on the current message
//   I<n>            an image part of n pad tokens (n may be negative; capped at 4096)
//   C<name>\t<args> a tool call on the current message
//   F<json>         a tool definition (any text: it must be JSON to render)
//   N               no generation prompt
//   X<source>       a template source for from_source (one line; \x01 stands for \n)
// In texts, \x01 stands for a newline. Other lines are ignored.
// Only qvl::Error may be thrown; what must hold besides:
//   - a rendered prompt ends with the generation prompt when one is asked for;
//   - a tool's dumps is JSON when the tool was, and dumps(dumps(t)) == dumps(t).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/chat_template.h"
#include "tokenizer/py_json.h"
#include "util/error.h"

namespace {

void require(bool property) {
  if (!property) __builtin_trap();
}

// The fixture model's template, recognised once per process.
const qvl::ChatTemplate& fixture_template() {
  static const qvl::ChatTemplate chat_template = [] {
    const char* path = QVL_SOURCE_DIR "/tests/fixtures/tiny-qwen3vl/chat_template.json";
    std::ifstream in(path);
    const nlohmann::json j = nlohmann::json::parse(in);
    return qvl::ChatTemplate::from_source(j.at("chat_template").get<std::string>());
  }();
  return chat_template;
}

std::string unescape_newlines(std::string_view s) {
  std::string out(s);
  std::replace(out.begin(), out.end(), '\x01', '\n');
  return out;
}

struct Conversation {
  std::vector<qvl::ChatMessage> messages;
  std::vector<std::string> tools;
  std::vector<std::string> template_sources;
  bool add_generation_prompt = true;
};

qvl::ChatMessage& current(Conversation& c) {
  if (c.messages.empty()) c.messages.push_back({"user", {}, {}});
  return c.messages.back();
}

void add_message(Conversation& c, std::string role, std::string_view text) {
  qvl::ChatPart part;
  part.text = unescape_newlines(text);
  c.messages.push_back({std::move(role), {std::move(part)}, {}});
}

Conversation parse(std::string_view input) {
  Conversation c;
  size_t begin = 0;
  while (begin < input.size()) {
    size_t end = input.find('\n', begin);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view line = input.substr(begin, end - begin);
    begin = end + 1;
    if (line.empty()) continue;
    const std::string_view rest = line.substr(1);
    switch (line[0]) {
      case 'S': add_message(c, "system", rest); break;
      case 'U': add_message(c, "user", rest); break;
      case 'A': add_message(c, "assistant", rest); break;
      case 'T': add_message(c, "tool", rest); break;
      case 'R': c.messages.push_back({std::string(rest), {}, {}}); break;
      case '+': {
        qvl::ChatPart part;
        part.text = unescape_newlines(rest);
        current(c).parts.push_back(std::move(part));
        break;
      }
      case 'I': {
        qvl::ChatPart part;
        part.kind = qvl::ChatPart::Kind::Image;
        // Capped so that a fuzzed count cannot ask for gigabytes of pad tokens legitimately.
        part.image_tokens = static_cast<int>(std::clamp(std::strtol(std::string(rest).c_str(), nullptr, 10), -4096L, 4096L));
        current(c).parts.push_back(std::move(part));
        break;
      }
      case 'C': {
        const size_t tab = rest.find('\t');
        qvl::ChatToolCall call;
        call.name = std::string(rest.substr(0, tab));
        if (tab != std::string_view::npos) call.arguments = unescape_newlines(rest.substr(tab + 1));
        current(c).tool_calls.push_back(std::move(call));
        break;
      }
      case 'F': c.tools.push_back(unescape_newlines(rest)); break;
      case 'N': c.add_generation_prompt = false; break;
      case 'X': c.template_sources.push_back(unescape_newlines(rest)); break;
      default: break;
    }
  }
  return c;
}

void check_tool_json(const std::string& tool) {
  std::string dumped;
  try {
    dumped = qvl::python_json_dumps_text(tool);
  } catch (const qvl::Error&) {
    return;  // not JSON: render() must refuse it too
  }
  // A client's tool is JSON that nlohmann accepted (valid UTF-8, no lone
  // surrogate escapes); for those, what the template writes is JSON too.
  if (nlohmann::json::accept(tool)) require(nlohmann::json::accept(dumped));
  require(qvl::python_json_dumps_text(dumped) == dumped);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const qvl::ChatTemplate& chat_template = fixture_template();
  const Conversation c = parse(std::string_view(reinterpret_cast<const char*>(data), size));
  for (const std::string& tool : c.tools) check_tool_json(tool);
  for (const std::string& source : c.template_sources) {
    try {
      qvl::ChatTemplate::from_source(source);
    } catch (const qvl::Error&) {
    }
  }
  try {
    const std::string prompt = chat_template.render(c.messages, c.tools, c.add_generation_prompt);
    if (c.add_generation_prompt) require(prompt.ends_with("<|im_start|>assistant\n"));
  } catch (const qvl::Error&) {
  }
  return 0;
}
