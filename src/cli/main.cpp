// qvl: one binary that is the engine, the CLI and the server.
#include <cstring>
#include <iostream>

#include "cli/commands.h"
#include "util/error.h"

#ifndef QVL_VERSION
#define QVL_VERSION "dev"
#endif

namespace {

using qvl::cli::Command;

constexpr Command kCommands[] = {
    {"run", "answer one prompt about zero or more images", qvl::cli::cmd_run},
    {"chat", "talk with the model in the terminal", qvl::cli::cmd_chat},
    {"serve", "serve the web page and the OpenAI-compatible API", qvl::cli::cmd_serve},
    {"embed", "vectors for texts, images, PDF pages and videos (Qwen3-VL-Embedding)", qvl::cli::cmd_embed},
    {"rerank", "score documents against a query (Qwen3-VL-Reranker)", qvl::cli::cmd_rerank},
    {"index", "add PDFs and images to a search collection, one vector per page", qvl::cli::cmd_index},
    {"search", "find the pages of a collection that answer a question", qvl::cli::cmd_search},
    {"info", "summarise a model folder", qvl::cli::cmd_info},
    {"tokenize", "text -> token ids (or ids -> text with --decode)", qvl::cli::cmd_tokenize},
    {"bench", "measure load, vision, prefill and decode speed", qvl::cli::cmd_bench},
    {"pull", "download a model into the Hugging Face cache", qvl::cli::cmd_pull},
    {"models", "list models in the Hugging Face cache and the q8/q4 weight cache", qvl::cli::cmd_models},
    {"quantize", "make a model's q8/q4 weights once, into the weight cache", qvl::cli::cmd_quantize},
};

void print_help() {
  std::cout << "usage: qvl <command> [options]\n\n"
               "qvl runs Qwen3-VL vision-language models on the CPU.\n\ncommands:\n";
  for (const Command& c : kCommands) {
    std::string name = c.name;
    std::cout << "  " << name << std::string(12 - name.size(), ' ') << c.summary << "\n";
  }
  std::cout << "\n'qvl <command> --help' shows a command's options. 'qvl --version' prints the version.\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_help();
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    print_help();
    return 0;
  }
  if (cmd == "--version" || cmd == "-V") {
    std::cout << "qvl " << QVL_VERSION << "\n";
    return 0;
  }
  for (const Command& c : kCommands) {
    if (cmd != c.name) continue;
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const qvl::UsageError& e) {
      std::cerr << "qvl " << e.what() << "\n";
      return 2;
    } catch (const qvl::Error& e) {
      std::cerr << "qvl " << cmd << ": " << e.what() << "\n";
      return 1;
    } catch (const std::bad_alloc&) {
      std::cerr << "qvl " << cmd << ": out of memory\n";
      return 1;
    } catch (const std::exception& e) {
      std::cerr << "qvl " << cmd << ": " << e.what() << "\n";
      return 1;
    }
  }
  std::cerr << "qvl: unknown command '" << cmd << "' (see qvl --help)\n";
  return 2;
}
