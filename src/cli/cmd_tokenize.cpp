// qvl tokenize: text -> token ids as a JSON array, or ids -> text (--decode),
// with the model folder's tokenizer.json.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/options.h"
#include "io/model_source.h"
#include "tokenizer/tokenizer.h"
#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {
namespace {

std::string read_input(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open ", path);
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) fail("cannot read ", path);
  return s.str();
}

std::vector<int32_t> parse_ids(const std::string& text, const std::string& from) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(from, " is not JSON (byte ", e.byte, "); --decode takes a JSON array of token ids");
  }
  if (!j.is_array()) fail(from, " is not a JSON array of token ids");
  std::vector<int32_t> ids;
  for (size_t k = 0; k < j.size(); ++k) {
    if (!j[k].is_number_integer() || j[k].get<int64_t>() < 0 || j[k].get<int64_t>() > INT32_MAX)
      fail(from, ": element ", k, " (", j[k].dump(), ") is not a token id");
    ids.push_back(static_cast<int32_t>(j[k].get<int64_t>()));
  }
  return ids;
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  Args args("tokenize", "--model DIR (--text TEXT | --file FILE) [--decode]",
            "Prints the token ids of a text as a JSON array. A file is tokenized byte for byte (no newline\n"
            "stripped). With --decode the input is a JSON array of ids and the decoded text is printed as is.");
  ModelChoice model;
  std::string text, file;
  bool decode = false, skip_special = false;
  visit_options(model, args);
  args(text, "text", "TEXT", "the text (or, with --decode, the JSON array of ids)");
  args(file, "file", "FILE", "read the text (or the JSON array of ids) from FILE");
  args(decode, "decode", "ids -> text instead of text -> ids");
  args(skip_special, "skip-special", "with --decode: leave out special tokens such as <|im_end|>");
  if (!args.parse(argc, argv)) return 0;
  if (!args.positional().empty())
    throw UsageError(cat("tokenize: unexpected argument '", args.positional()[0], "' (see qvl tokenize --help)"));
  if (!args.has("model")) throw UsageError("tokenize: --model is required (see qvl tokenize --help)");
  if (args.has("text") == args.has("file"))
    throw UsageError("tokenize: give exactly one of --text and --file (see qvl tokenize --help)");
  if (skip_special && !decode)
    throw UsageError("tokenize: --skip-special applies only with --decode");

  std::string input = args.has("text") ? text : read_input(file);
  std::string dir = resolve_model(model.model, model.source);
  std::string path = (std::filesystem::path(dir) / "tokenizer.json").string();
  if (!std::filesystem::exists(path)) fail("model folder ", dir, " has no tokenizer.json");
  Tokenizer tok = Tokenizer::load(path);

  if (decode) {
    std::string from = args.has("text") ? "--text" : file;
    std::cout << tok.decode(parse_ids(input, from), skip_special);
  } else {
    std::cout << nlohmann::json(tok.encode(input)).dump() << "\n";
  }
  std::cout.flush();
  if (!std::cout) fail("cannot write to stdout");
  return 0;
}

}  // namespace qvl::cli
