// The pieces a chat-completions body (chat_request.h) and a Responses body
// (responses_request.h) are both read with, so the two shapes make the same
// ChatRequest with the same checks: content parts (text, images, PDFs,
// videos), sampling fields, function tools and tool choices, a JSON-schema
// response format and the tool turns of a history; media are only noted
// (ChatRequest::pending), for the media step (chat_media.h). Each refusal names the field by the
// path of the shape it was sent in (request_fields.h).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/requests/chat_request.h"
#include "server/documents/document_input.h"
#include "server/requests/request_fields.h"
#include "server/media/video_input.h"

namespace qvl {

// Reads the content parts of the message about to be added to out.generate
// (its index is out.generate.messages.size()); media are only noted here,
// in out.pending, and fetched by take_chat_media (chat_media.h).
struct PartParser {
  const ChatLimits& limits;
  ChatRequest& out;
  const VideoOptions& video_defaults;  // mm_processor_kwargs (out.pending.video_defaults)

  // A text part, within limits.max_text_bytes.
  std::string text(const RequestField& v) const;
  // A medium by URL (an image, a clip, or a PDF whose pages replace it: its
  // bytes decide); `url` names the field that holds it.
  MessagePart image_url(const RequestField& url, size_t part_index);
  // A chat image_url part: {"image_url": {"url": …}} or {"image_url": "…"}.
  MessagePart image(const RequestField& part, size_t part_index);
  // A file object (document_input.h's parse_file_part): a PDF, or whatever its bytes are.
  MessagePart file(const RequestField& file, size_t part_index, bool typed_part);
  // A video_url or video part (video_input.h).
  MessagePart video(const RequestField& part, size_t part_index);
  // Content as either shape sends it: a string (one text part) or an array
  // of typed parts, each read by `read` (given the part, its "type" and the
  // index its MessagePart will have).
  using PartReader = std::function<MessagePart(const RequestField& part, const RequestField& type, size_t index)>;
  std::vector<MessagePart> content(const RequestField& c, const PartReader& read);
  // Chat content; allow_media false: text parts only (tool results, assistant turns).
  std::vector<MessagePart> content(const RequestField& c, bool allow_media = true);
};

// Media parts of `types` in the content arrays of `messages` (JSON as sent),
// counted before anything is parsed or decoded, so a body with a hundred
// images is refused at once naming `param` (a file part counts as one here,
// as its pages once its PDF is opened).
void check_image_count(const nlohmann::ordered_json& messages, std::initializer_list<std::string_view> types,
                       const ChatLimits& limits, const std::string& param);

// The fields both shapes share: sampling (temperature, top_p, min_p, top_k,
// the penalties, seed), qvl's repetition guard, jump_forward and
// reasoning_budget, stop, the image area (min_pixels, max_pixels) and vLLM's
// mm_processor_kwargs, returned as the video defaults.
VideoOptions read_sampling_fields(const RequestField& body, GenerateRequest& g, const ChatLimits& limits);

// A function's name: OpenAI's rule [a-zA-Z0-9_-]{1,64}.
const std::string& function_name(const RequestField& name);
// A function tool's name, description, strict and parameters (a JSON
// Schema object), whichever shape holds them; `definition` is the caller's.
Tool function_tool(const RequestField& fn);
// Adds `tool`, refusing a second one of the same name (named by `name`).
void add_tool(GenerateRequest& g, Tool tool, const RequestField& name);
// "auto", "none" or "required".
void tool_choice_mode(const RequestField& tc, GenerateRequest& g);
// A tool_choice naming one function, which must be among g.tools.
void tool_choice_function(const RequestField& name, GenerateRequest& g);
// A JSON-schema response format's description, strict (always enforced) and
// schema (required); the name is the caller's (required in chat, not in Responses).
ResponseFormat json_schema_format(const RequestField& js);

// The ids of the latest assistant turn's calls, which the tool results after
// it answer (the template renders results by position, so an id that
// answers no call is the client's mistake, as OpenAI says too).
class ToolTurns {
 public:
  void assistant() {
    open_.clear();
    after_calls_ = false;
  }
  void call(const std::string& id) {
    open_.insert(id);
    after_calls_ = true;
  }
  void other() { after_calls_ = false; }
  // A tool result answering `id`: refused naming `turn` when no assistant
  // turn with calls precedes it, and `id` when it answers none of them.
  const std::string& answer(const RequestField& id, const std::string& turn) const;

 private:
  std::set<std::string> open_;
  bool after_calls_ = false;
};

}  // namespace qvl
