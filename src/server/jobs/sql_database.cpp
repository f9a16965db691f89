#include "server/jobs/sql_database.h"

#include <cctype>

#include "util/error.h"

namespace qvl {

SqlParam json_param(const nlohmann::json& j) {
  if (j.is_null()) return {};
  return j.dump();
}

int64_t SqlRows::i64(int row, int col) const {
  const auto& c = cell(row, col);
  return c ? std::stoll(*c) : 0;
}

bool SqlRows::flag(int row, int col) const {
  const auto& c = cell(row, col);
  return c && (*c == "t" || *c == "1");  // PostgreSQL's boolean | SQLite's integer
}

nlohmann::json SqlRows::json_at(int row, int col) const {
  const auto& c = cell(row, col);
  return c ? nlohmann::json::parse(*c) : nlohmann::json();
}

std::string SqlDialect::translate(std::string_view neutral) const {
  std::string out;
  out.reserve(neutral.size() + 32);
  for (size_t i = 0; i < neutral.size(); ++i) {
    const char ch = neutral[i];
    if (ch == '?' && i + 1 < neutral.size() && std::isdigit(static_cast<unsigned char>(neutral[i + 1]))) {
      out += param_mark;
    } else if (ch == '{') {
      const size_t end = neutral.find('}', i);
      if (end == std::string_view::npos) throw Error(cat("job store: unclosed { in SQL: ", neutral.substr(0, 80)));
      const std::string_view word = neutral.substr(i + 1, end - i - 1);
      if (word == "now_ms") out += now_ms;
      else if (word == "true") out += true_value;
      else if (word == "skip_locked") out += skip_locked;
      else if (word == "ref_seq") out += ref_seq;
      else if (word == "jobs" || word == "batches" || word == "media" || word == "media_refs" || word == "responses" ||
               word == "response_items")
        out.append(table_prefix).append(word);
      else throw Error(cat("job store: unknown word {", word, "} in SQL: ", neutral.substr(0, 80)));
      i = end;
    } else {
      out += ch;
    }
  }
  return out;
}

void SqlConnection::serialize(SqlLock lock) {
  if (!dialect_.serialize.empty()) exec_native(dialect_.serialize, {static_cast<int64_t>(lock)});
}

void SqlConnection::notify(const char* what) {
  if (!dialect_.notify.empty()) exec_native(dialect_.notify, {std::string(what)});
}

SqlTransaction::SqlTransaction(SqlConnection& c, Commit commit) : c_(c) {
  c_.exec_native(c_.dialect().begin, {});
  if (commit == Commit::Relaxed && !c_.dialect().relaxed_commit.empty()) {
    try {
      c_.exec_native(c_.dialect().relaxed_commit, {});
    } catch (...) {
      rollback();
      throw;
    }
  }
}

SqlTransaction::~SqlTransaction() {
  if (!done_) rollback();
}

void SqlTransaction::rollback() noexcept {
  try {
    c_.exec_native("ROLLBACK", {});
  } catch (...) {  // the connection is gone (the server rolled back), or the database already did
  }
}

void SqlTransaction::commit() {
  c_.exec_native("COMMIT", {});
  done_ = true;
}

}  // namespace qvl
