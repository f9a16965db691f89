// sql_database.h's neutral SQL, turned into a dialect's own: what the job
// store writes once reaches each database in its words, and a word the
// dialect does not know is refused by name rather than sent on.
#include <gtest/gtest.h>

#include "server/jobs/sql_database.h"
#include "util/error.h"

namespace qvl {
namespace {

SqlDialect dollar_dialect() {
  SqlDialect d;
  d.table_prefix = "qvl_";
  d.param_mark = '$';
  d.now_ms = "clock_ms()";
  d.true_value = "true";
  d.skip_locked = " FOR UPDATE SKIP LOCKED";
  d.ref_seq = "seq";
  return d;
}

TEST(SqlDialect, WordsTablesAndParametersBecomeTheDialects) {
  EXPECT_EQ(
      dollar_dialect().translate("UPDATE {jobs} SET cancel_requested = {true}, lease_until_ms = {now_ms} + ?12 "
                                 "WHERE id = ?1 AND batch = ?2"),
      "UPDATE qvl_jobs SET cancel_requested = true, lease_until_ms = clock_ms() + $12 WHERE id = $1 AND batch = $2");
  EXPECT_EQ(dollar_dialect().translate("SELECT r.hash FROM {media_refs} r ORDER BY r.{ref_seq} LIMIT 1{skip_locked}"),
            "SELECT r.hash FROM qvl_media_refs r ORDER BY r.seq LIMIT 1 FOR UPDATE SKIP LOCKED");
  SqlDialect question;  // SQLite's marks and bare tables
  question.now_ms = "now()";
  EXPECT_EQ(question.translate("DELETE FROM {responses} WHERE seq = ?1 AND bytes < {now_ms}"),
            "DELETE FROM responses WHERE seq = ?1 AND bytes < now()");
  // A ? that is no parameter (not followed by a digit) stays as it is.
  EXPECT_EQ(dollar_dialect().translate("SELECT '?' || ?1"), "SELECT '?' || $1");
}

TEST(SqlDialect, AnUnknownWordIsRefusedByName) {
  try {
    dollar_dialect().translate("SELECT * FROM {job}");
    FAIL() << "an unknown word was sent on";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown word {job} in SQL: SELECT * FROM {job}"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(dollar_dialect().translate("SELECT {now_ms"), Error);
}

}  // namespace
}  // namespace qvl
