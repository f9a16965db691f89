// One pass over the bytes, each read once: outside a block the parser only
// looks for "<tool_call>" (holding back a suffix that may begin it); inside,
// a small state machine reads the JSON object key by key. The arguments value
// is not parsed, only followed (brackets and strings), so its text streams
// out as the model writes it.
#include "engine/tool_calls.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace qvl {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kOpenLine = "\n<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Characters of a number, true, false or null.
bool is_scalar_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '+' ||
         c == '.';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int hex4(std::string_view s) {
  int v = 0;
  for (char c : s) {
    int h = hex_value(c);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

std::vector<ToolCallParser::Event> ToolCallParser::push(std::string_view text) {
  std::vector<Event> out;
  for (char c : text) step(c, out);
  if (state_ == State::Text)
    release_text(out, false);
  else
    flush_arguments(out);
  return out;
}

std::vector<ToolCallParser::Event> ToolCallParser::finish() {
  std::vector<Event> out;
  if (state_ == State::Text)
    release_text(out, true);
  else
    break_block(out);
  eat_newline_ = false;
  return out;
}

void ToolCallParser::step(char c, std::vector<Event>& out) {
  if (state_ == State::Text) {
    if (eat_newline_) {
      eat_newline_ = false;
      if (c == '\n') return;  // the separator after </tool_call>
    }
    pending_ += c;
    if (pending_.size() >= kOpen.size() && pending_.ends_with(kOpen)) {
      size_t at = pending_.size() - kOpen.size();
      if (at > 0 && pending_[at - 1] == '\n') --at;  // the "\n" before a block is markup
      emit_content(out, std::string_view(pending_).substr(0, at));
      raw_ = pending_.substr(at);
      pending_.clear();
      state_ = State::Open;
    }
    return;
  }
  raw_ += c;
  if (!block_step(c, out)) {
    raw_.pop_back();
    break_block(out);
    step(c, out);  // read again, as text
  }
}

bool ToolCallParser::block_step(char c, std::vector<Event>& out) {
  switch (state_) {
    case State::Text: return false;  // not reached
    case State::Open:
      if (is_ws(c)) return true;
      if (c != '{') return false;
      state_ = State::Key;
      first_key_ = true;
      return true;
    case State::Key:
      if (is_ws(c)) return true;
      if (c == '"') {
        key_.clear();
        escape_.clear();
        state_ = State::KeyString;
        return true;
      }
      if (c == '}' && first_key_) return end_object(out);
      return false;
    case State::KeyString: {
      int r = decode(c, &key_);
      if (r == 1) state_ = State::Colon;
      return r >= 0;
    }
    case State::Colon:
      if (is_ws(c)) return true;
      if (c != ':') return false;
      target_ = key_ == "name" && !have_name_                ? Target::Name
                : key_ == "arguments" && !have_arguments_ ? Target::Arguments
                                                          : Target::Other;
      state_ = State::Value;
      return true;
    case State::Value:
      if (is_ws(c)) return true;
      if (c == '"') {
        kind_ = ValueKind::String;
        escape_.clear();
        ws_.clear();
      } else if (target_ == Target::Name) {
        return false;  // a name is a string
      } else if (c == '{' || c == '[') {
        kind_ = ValueKind::Container;
        brackets_.assign(1, c);
        in_string_ = escaped_ = false;
        if (target_ == Target::Arguments) arguments_ += c;
      } else if (is_scalar_char(c)) {
        kind_ = ValueKind::Scalar;
        scalar_.assign(1, c);
      } else {
        return false;
      }
      state_ = State::InValue;
      return true;
    case State::InValue:
      switch (kind_) {
        case ValueKind::Container:
          if (in_string_) {
            if (escaped_)
              escaped_ = false;
            else if (c == '\\')
              escaped_ = true;
            else if (c == '"')
              in_string_ = false;
          } else if (c == '"') {
            in_string_ = true;
          } else if (c == '{' || c == '[') {
            brackets_ += c;
          } else if (c == '}' || c == ']') {
            if (brackets_.back() != (c == '}' ? '{' : '[')) return false;
            brackets_.pop_back();
          }
          if (target_ == Target::Arguments) arguments_ += c;
          return brackets_.empty() ? end_value(out) : true;
        case ValueKind::String: {
          std::string decoded;
          int r = decode(c, target_ == Target::Name ? &name_ : target_ == Target::Arguments ? &decoded : nullptr);
          // Arguments as a string: its decoded text, without surrounding whitespace.
          for (char d : decoded) {
            if (is_ws(d)) {
              if (!arguments_.empty()) ws_ += d;
            } else {
              arguments_ += ws_;
              ws_.clear();
              arguments_ += d;
            }
          }
          if (r < 0) return false;
          return r == 1 ? end_value(out) : true;
        }
        case ValueKind::Scalar:
          if (is_scalar_char(c)) {
            scalar_ += c;
            return true;
          }
          return end_value(out) && block_step(c, out);  // c follows the value
      }
      return false;
    case State::AfterValue:
      if (is_ws(c)) return true;
      if (c == ',') {
        state_ = State::Key;
        first_key_ = false;
        return true;
      }
      if (c == '}') return end_object(out);
      return false;
    case State::AfterObject:
      if (is_ws(c)) return true;
      if (c != kClose[0]) return false;
      close_ = 1;
      state_ = State::Close;
      return true;
    case State::Close:
      if (c != kClose[close_]) return false;
      if (++close_ == kClose.size()) end_block(out);
      return true;
  }
  return false;
}

bool ToolCallParser::end_value(std::vector<Event>& out) {
  if (kind_ == ValueKind::Scalar && !nlohmann::json::accept(scalar_)) return false;
  switch (target_) {
    case Target::Name:
      have_name_ = begun_ = true;
      id_ = "call_";
      for (int k = 0; k < 24; ++k) {
        static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        id_ += kAlnum[rng_() % 62];
      }
      out.push_back({Event::Kind::CallBegin, static_cast<int>(calls_.size()), name_, id_});
      flush_arguments(out);  // arguments that came before the name
      break;
    case Target::Arguments:
      if (kind_ == ValueKind::Scalar) arguments_ = scalar_ == "null" ? "{}" : scalar_;
      ws_.clear();
      have_arguments_ = true;
      break;
    case Target::Other: break;
  }
  state_ = State::AfterValue;
  return true;
}

bool ToolCallParser::end_object(std::vector<Event>& out) {
  if (!have_name_) return false;
  if (!have_arguments_) {
    arguments_ = "{}";
    have_arguments_ = true;
  }
  flush_arguments(out);
  state_ = State::AfterObject;
  return true;
}

void ToolCallParser::end_block(std::vector<Event>& out) {
  flush_arguments(out);
  calls_.push_back({id_, name_, arguments_});
  reset_block();
  eat_newline_ = true;
}

void ToolCallParser::break_block(std::vector<Event>& out) {
  if (begun_) {
    flush_arguments(out);
    calls_.push_back({id_, name_, arguments_.substr(0, arguments_sent_)});
  } else {
    emit_content(out, raw_);
  }
  reset_block();
}

void ToolCallParser::reset_block() {
  state_ = State::Text;
  raw_.clear();
  key_.clear();
  escape_.clear();
  scalar_.clear();
  ws_.clear();
  brackets_.clear();
  name_.clear();
  id_.clear();
  arguments_.clear();
  arguments_sent_ = 0;
  close_ = 0;
  have_name_ = have_arguments_ = begun_ = false;
}

// Keeps back the longest suffix that may still become "\n<tool_call>" or
// "<tool_call>" (a full one never stays in pending_: step() opens the block).
void ToolCallParser::release_text(std::vector<Event>& out, bool all) {
  size_t hold = 0;
  if (!all) {
    for (size_t k = std::min(pending_.size(), kOpenLine.size()); k > 0; --k) {
      std::string_view tail = std::string_view(pending_).substr(pending_.size() - k);
      if (kOpenLine.starts_with(tail) || kOpen.starts_with(tail)) {
        hold = k;
        break;
      }
    }
  }
  emit_content(out, std::string_view(pending_).substr(0, pending_.size() - hold));
  pending_.erase(0, pending_.size() - hold);
}

void ToolCallParser::emit_content(std::vector<Event>& out, std::string_view text) {
  if (text.empty()) return;
  content_ += text;
  if (!out.empty() && out.back().kind == Event::Kind::Content)
    out.back().text += text;
  else
    out.push_back({Event::Kind::Content, 0, std::string(text), {}});
}

void ToolCallParser::flush_arguments(std::vector<Event>& out) {
  if (!begun_ || arguments_sent_ == arguments_.size()) return;
  std::string_view piece = std::string_view(arguments_).substr(arguments_sent_);
  const int index = static_cast<int>(calls_.size());
  if (!out.empty() && out.back().kind == Event::Kind::CallArguments && out.back().index == index)
    out.back().text += piece;
  else
    out.push_back({Event::Kind::CallArguments, index, std::string(piece), {}});
  arguments_sent_ = arguments_.size();
}

// One character of a JSON string after its opening quote, decoded into
// *sink (when given): 1 at the closing quote, -1 on a bad escape.
int ToolCallParser::decode(char c, std::string* sink) {
  if (escape_.empty()) {
    if (c == '\\') {
      escape_ = "\\";
      return 0;
    }
    if (c == '"') return 1;
    if (sink) *sink += c;
    return 0;
  }
  escape_ += c;
  const size_t n = escape_.size();
  if (n == 2) {
    char e = 0;
    switch (c) {
      case '"': e = '"'; break;
      case '\\': e = '\\'; break;
      case '/': e = '/'; break;
      case 'b': e = '\b'; break;
      case 'f': e = '\f'; break;
      case 'n': e = '\n'; break;
      case 'r': e = '\r'; break;
      case 't': e = '\t'; break;
      case 'u': return 0;
      default: return -1;
    }
    if (sink) *sink += e;
    escape_.clear();
    return 0;
  }
  if (n <= 6) {  // \uXXXX
    if (hex_value(c) < 0) return -1;
    if (n < 6) return 0;
    int u = hex4(std::string_view(escape_).substr(2, 4));
    if (u >= 0xD800 && u <= 0xDBFF) return 0;  // a low surrogate must follow
    if (u >= 0xDC00 && u <= 0xDFFF) return -1;
    if (sink) append_utf8(*sink, static_cast<uint32_t>(u));
    escape_.clear();
    return 0;
  }
  // \uD8xx\uDCxx
  if (n == 7) return c == '\\' ? 0 : -1;
  if (n == 8) return c == 'u' ? 0 : -1;
  if (hex_value(c) < 0) return -1;
  if (n < 12) return 0;
  int hi = hex4(std::string_view(escape_).substr(2, 4)), lo = hex4(std::string_view(escape_).substr(8, 4));
  if (lo < 0xDC00 || lo > 0xDFFF) return -1;
  if (sink) append_utf8(*sink, 0x10000 + ((static_cast<uint32_t>(hi) - 0xD800) << 10) + (lo - 0xDC00));
  escape_.clear();
  return 0;
}

}  // namespace qvl
