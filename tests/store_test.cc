// What only the SQLite results store has: a file (its directory, WAL, damage, permissions, file
// kinds), SQLite's own limits, and the store-id parser and default path every store shares. The
// behaviour both backends share is tested on both in store_backends_test.cc.
#include "kstacklab/store/store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kstacklab/common/fileio.h"
#include "kstacklab/loader/load.h"
#include "test_support.h"

namespace kstacklab::store {
namespace {

namespace fs = std::filesystem;

RunResult Sample(const std::string& label) { return testing_support::SampleResult(label); }

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kstacklab-store-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/sub/dir/results.db";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  ResultStore OpenOrDie(ResultStore::Mode mode = ResultStore::Mode::kCreate) {
    auto s = ResultStore::Open(path_, mode);
    if (!s.ok()) ADD_FAILURE() << s.error().message;
    return std::move(s).value();
  }
  static int64_t InsertOrDie(ResultStore& s, const RunResult& r) {
    auto id = s.Insert(r);
    if (!id.ok()) ADD_FAILURE() << id.error().message;
    return id.ok() ? *id : -1;
  }
  // Runs one SQL statement on the raw file (to set up states kstacklab never writes itself).
  void RawExec(const std::string& path, const char* sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  std::string RawQuery(const std::string& path, const char* sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK);
    std::string out;
    if (sqlite3_step(st) == SQLITE_ROW)
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(StoreTest, CreatesParentDirectoriesAndUsesWalAndSchemaVersion) {
  { ResultStore store = OpenOrDie(); }
  EXPECT_TRUE(fs::exists(path_));
  EXPECT_EQ(RawQuery(path_, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(RawQuery(path_, "PRAGMA user_version"), std::to_string(kStoreSchemaVersion));
}

// A store whose file was damaged (a bad disk, a copy cut short): every way of reading it says
// so and what to do, and a lookup that finds no row in a damaged table does not claim the id
// was never stored.
TEST_F(StoreTest, ADamagedStoreSaysSoAndWhatToDo) {
  {
    ResultStore store = OpenOrDie();
    for (int i = 0; i < 3; ++i) InsertOrDie(store, Sample("a"));
  }
  ASSERT_EQ(RawQuery(path_, "PRAGMA wal_checkpoint(TRUNCATE)"), "0");
  {  // page 2 (the first table's root) overwritten, as a bad sector would
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    const std::string junk(4096, '\xab');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    ASSERT_TRUE(f.good());
  }
  auto store = ResultStore::Open(path_, ResultStore::Mode::kExisting);
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto list = store->List();
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().exit_code, kExitRuntime);
  EXPECT_NE(list.error().message.find("database disk image is malformed; the store file is "
                                      "damaged: keep a copy, then move it away"),
            std::string::npos)
      << list.error().message;
  for (int64_t id : {int64_t{1}, int64_t{2}}) {
    auto got = store->Get(id);
    ASSERT_FALSE(got.ok()) << id;
    EXPECT_EQ(got.error().exit_code, kExitRuntime) << got.error().message;
    EXPECT_NE(got.error().message.find("the store file is damaged"), std::string::npos)
        << got.error().message;
    EXPECT_EQ(got.error().message.find('\n'), std::string::npos) << "one line";
  }
}

TEST_F(StoreTest, OpeningAMissingStoreForReadingCreatesNothing) {
  auto s = ResultStore::Open(path_, ResultStore::Mode::kExisting);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().exit_code, kExitUsage);
  EXPECT_NE(s.error().message.find("no results store at " + path_), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ + "/sub"));
}

TEST_F(StoreTest, RefusesFilesThatAreNotAStore) {
  fs::create_directories(dir_ + "/sub/dir");
  { std::ofstream(path_) << "this is not a database, just text that is long enough to matter\n"; }
  auto s = ResultStore::Open(path_, ResultStore::Mode::kCreate);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().exit_code, kExitUsage);
  EXPECT_NE(s.error().message.find("not a SQLite database"), std::string::npos)
      << s.error().message;
  // `run` refuses it before measuring, as it does someone else's database (below).
  EXPECT_EQ(CheckStoreLocation(path_).error().exit_code, kExitUsage);

  std::string other = dir_ + "/other.db";
  RawExec(other, "CREATE TABLE t(x)");
  auto o = ResultStore::Open(other, ResultStore::Mode::kCreate);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().message.find("not a kstacklab results store"), std::string::npos);
  EXPECT_EQ(RawQuery(other, "SELECT count(*) FROM sqlite_master"), "1");  // left untouched
  EXPECT_FALSE(CheckStoreLocation(other).ok());
  // A FIFO at the store path would block the open forever: refused, for readers too.
  const std::string fifo = dir_ + "/fifo.db";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (auto mode : {ResultStore::Mode::kCreate, ResultStore::Mode::kExisting}) {
    auto f = ResultStore::Open(fifo, mode);
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.error().message.find("is not a regular file"), std::string::npos);
  }
}

TEST_F(StoreTest, UnwritableLocationIsARuntimeErrorWithTheRemedy) {
  std::string blocker = dir_ + "/file";
  { std::ofstream(blocker) << "x"; }
  auto s = RecordInStore(Sample("a"), blocker + "/kstacklab/results.db");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().exit_code, kExitRuntime);
  EXPECT_NE(s.error().message.find(blocker), std::string::npos) << s.error().message;
  // Library wording: the remedy without naming a flag (cli/ adds --store / --no-store).
  EXPECT_NE(s.error().message.find("choose a writable store location"), std::string::npos);
  EXPECT_EQ(s.error().message.find("--"), std::string::npos) << s.error().message;
}

TEST_F(StoreTest, ReadOnlyOpensNeverWrite) {
  // A foreign SQLite file is refused and left exactly as it was (no WAL switch).
  std::string other = dir_ + "/other.db";
  RawExec(other, "CREATE TABLE t(x)");
  auto before = fs::file_size(other);
  auto o = ResultStore::Open(other, ResultStore::Mode::kExisting);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().message.find("not a kstacklab results store"), std::string::npos);
  EXPECT_EQ(fs::file_size(other), before);
  EXPECT_FALSE(fs::exists(other + "-wal"));
  EXPECT_EQ(RawQuery(other, "PRAGMA journal_mode"), "delete");
  // Opened to create (`results import`, `run`): refused the same way, still unchanged.
  auto c = ResultStore::Open(other, ResultStore::Mode::kCreate);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("not a kstacklab results store"), std::string::npos);
  EXPECT_EQ(RawQuery(other, "PRAGMA journal_mode"), "delete");

  // A 0-byte file reads as an empty store and stays 0 bytes.
  std::string zero = dir_ + "/zero.db";
  { std::ofstream z(zero); }
  auto z = ResultStore::Open(zero, ResultStore::Mode::kExisting);
  ASSERT_TRUE(z.ok()) << z.error().message;
  auto list = z->List();
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_TRUE(list->empty());
  auto doc = z->Document(1);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().exit_code, kExitUsage);
  EXPECT_EQ(fs::file_size(zero), 0u);

  // A real store read-only: readable, and an insert through the read-only handle fails.
  ASSERT_TRUE(RecordInStore(Sample("a"), path_).ok());
  auto r = ResultStore::Open(path_, ResultStore::Mode::kExisting);
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto rows = r->List();
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 1u);
  EXPECT_FALSE(r->Insert(Sample("b")).ok());
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM runs"), "1");
}

// No kstacklab writes a negative user_version: such a file is not a store.
TEST_F(StoreTest, RefusesANegativeSchemaVersion) {
  {
    ResultStore store = OpenOrDie();
    InsertOrDie(store, Sample("a"));
  }
  RawExec(path_, "PRAGMA user_version = -1");
  for (auto mode : {ResultStore::Mode::kCreate, ResultStore::Mode::kExisting}) {
    auto st = ResultStore::Open(path_, mode);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().exit_code, kExitUsage);
    EXPECT_NE(st.error().message.find("schema version -1"), std::string::npos)
        << st.error().message;
  }
  EXPECT_FALSE(CheckStoreLocation(path_).ok());
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM runs"), "1");
}

// A store path ending in '/' and one under /proc are refused before any work.
TEST_F(StoreTest, StoreLocationsThatCannotHoldAStoreAreRefusedFirst) {
  for (const std::string& bad : {dir_ + "/new/", std::string("/proc/kstacklab/results.db")}) {
    Status st = CheckStoreLocation(bad);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.error().exit_code, kExitUsage) << bad;
  }
  EXPECT_FALSE(fs::exists(dir_ + "/new"));
  EXPECT_TRUE(CheckStoreLocation(dir_ + "/fresh/results.db").ok());
}

// The store's own messages say what is wrong: a table without a column it needs is
// named (it said "not an error"), and a table at the largest row id is not "free space".
TEST_F(StoreTest, MissingColumnAndLastRowIdAreNamed) {
  {
    ResultStore store = OpenOrDie();
    InsertOrDie(store, Sample("a"));
  }
  RawExec(path_, "UPDATE runs SET id = 9223372036854775807");
  {
    ResultStore store = OpenOrDie();
    auto id = store.Insert(Sample("b"));
    ASSERT_FALSE(id.ok());
    EXPECT_NE(id.error().message.find("largest SQLite allows"), std::string::npos)
        << id.error().message;
    EXPECT_EQ(id.error().message.find("free space"), std::string::npos) << id.error().message;
  }
  RawExec(path_, "ALTER TABLE runs DROP COLUMN host");
  ResultStore store = OpenOrDie();
  auto id = store.Insert(Sample("c"));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().message.find("no column named host"), std::string::npos)
      << id.error().message;
  EXPECT_NE(id.error().message.find("not those of kstacklab's store schema"), std::string::npos);
  EXPECT_EQ(id.error().message.find("not an error"), std::string::npos) << id.error().message;
}

TEST(StoreIds, OneParserForEveryCommand) {
  EXPECT_EQ(*loader::ParseStoreId("17"), 17);
  EXPECT_EQ(*loader::ParseStoreId("id:17"), 17);
  EXPECT_EQ(*loader::ParseStoreId("999999999999999999"), 999999999999999999);
  for (const char* bad :
       {"0", "id:0", "-1", "+1", " 1", "0x10", "", "id:", "1e3", "9999999999999999999"}) {
    auto id = loader::ParseStoreId(bad);
    ASSERT_FALSE(id.ok()) << bad;
    EXPECT_EQ(id.error().exit_code, kExitUsage);
    EXPECT_NE(id.error().message.find("is not a store id"), std::string::npos) << bad;
  }
}

// Store ids resolve on both backends (store_backends_test); a file path that holds no store yet
// says so.
TEST_F(StoreTest, AStoreIdWithoutAStoreSaysThereIsNone) {
  auto no_store = loader::LoadResultInput("3", dir_ + "/none.db");
  ASSERT_FALSE(no_store.ok());
  EXPECT_EQ(no_store.error().exit_code, kExitUsage);
  EXPECT_NE(no_store.error().message.find("no results store at " + dir_ + "/none.db yet"),
            std::string::npos)
      << no_store.error().message;
}

TEST(StoreFields, KernelAndHostComeFromTheCapture) {
  RunResult r;
  r.environment = Json{{"kernel", {{"release", "6.18.44"}, {"hostname", "box"}}}};
  EXPECT_EQ(StoredKernelRelease(r), "6.18.44");
  EXPECT_EQ(StoredHost(r), "box");
  r.environment = Json{{"kernel", {{"release", nullptr}}}};
  EXPECT_EQ(StoredKernelRelease(r), "");
  EXPECT_EQ(StoredHost(r), "");
}

TEST(StoreFields, EnvironmentFactsAreTypedOrAbsent) {
  const Json env = {{"kernel",
                     {{"release", "6.18.44"},
                      {"hostname", "box"},
                      {"randomize_kstack_offset", "off"},
                      {"effective_kstack_randomization", false}}},
                    {"sysctl", {{"kernel.stack_erasing", 1}}}};
  const EnvironmentFacts f = EnvironmentFactsOf(env);
  EXPECT_EQ(f.kernel_release, "6.18.44");
  EXPECT_EQ(f.hostname, "box");
  EXPECT_EQ(f.randomize_kstack_offset, "off");
  EXPECT_EQ(f.effective_kstack_randomization, false);
  EXPECT_EQ(f.stack_erasing, 1);
  // Another JSON type than the capture writes, null, or a missing or misshapen parent: absent.
  const Json odd = {{"kernel",
                     {{"release", 6},
                      {"hostname", nullptr},
                      {"randomize_kstack_offset", true},
                      {"effective_kstack_randomization", "yes"}}},
                    {"sysctl", {{"kernel.stack_erasing", "1"}}}};
  for (const Json& e : {odd, Json::object(), Json::array(), Json(nullptr), Json("kernel"),
                        Json{{"kernel", Json::array({1, 2})}, {"sysctl", 3}}}) {
    const EnvironmentFacts g = EnvironmentFactsOf(e);
    EXPECT_FALSE(g.kernel_release || g.hostname || g.randomize_kstack_offset ||
                 g.effective_kstack_randomization || g.stack_erasing)
        << e.dump();
  }
}

TEST(StoreDefaultPath, FollowsKstacklabStoreThenXdgDataHome) {
  auto saved = [](const char* name) {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v)
      ::setenv(name, v->c_str(), 1);
    else
      ::unsetenv(name);
  };
  const auto xdg = saved("XDG_DATA_HOME");
  const auto team = saved("KSTACKLAB_STORE");
  ::unsetenv("KSTACKLAB_STORE");
  ::setenv("XDG_DATA_HOME", "/tmp/xdg-test", 1);
  EXPECT_EQ(DefaultStorePath(), "/tmp/xdg-test/kstacklab/results.db");
  ::setenv("KSTACKLAB_STORE", "", 1);  // empty: as if unset
  EXPECT_EQ(DefaultStorePath(), "/tmp/xdg-test/kstacklab/results.db");
  ::setenv("KSTACKLAB_STORE", "postgresql://db.example/perf", 1);
  EXPECT_EQ(DefaultStorePath(), "postgresql://db.example/perf");
  EXPECT_TRUE(IsStoreUrl(DefaultStorePath()));
  restore("XDG_DATA_HOME", xdg);
  restore("KSTACKLAB_STORE", team);
}

TEST(StoreUrl, OnlyThePostgresqlSchemesAreUrls) {
  EXPECT_TRUE(IsStoreUrl("postgresql://h/db"));
  EXPECT_TRUE(IsStoreUrl("postgres://h/db"));
  for (const char* path : {"results.db", "./postgresql://x", "/tmp/postgres://", "mysql://h/db",
                           "POSTGRESQL://h/db", ""}) {
    EXPECT_FALSE(IsStoreUrl(path)) << path;
  }
}

// A value libpq would only refuse when connecting is refused first, as the user's error (exit 2),
// in one line naming the parameter and what it may be. Nothing listens on port 1: a URL that got
// as far as connecting fails with "is the server running" (exit 1) instead.
TEST(StoreUrl, BadParameterValuesAreUsageErrorsNamingTheParameterBeforeConnecting) {
  const std::string base = "postgresql://nobody@127.0.0.1:1/db?";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"sslmode=junk",
       "sslmode is \"junk\": use one of disable, allow, prefer, require, "
       "verify-ca, verify-full"},
      {"connect_timeout=abc", "connect_timeout is \"abc\": use a whole number"},
      {"connect_timeout=-1", "connect_timeout is \"-1\": use a whole number"},
      {"target_session_attrs=junk",
       "target_session_attrs is \"junk\": use one of any, read-write, read-only, primary, "
       "standby, prefer-standby"},
      {"gssencmode=maybe", "gssencmode is \"maybe\": use one of disable, prefer, require"},
      {"channel_binding=yes", "channel_binding is \"yes\": use one of disable, prefer, require"},
      {"ssl_min_protocol_version=TLSv9", "ssl_min_protocol_version is \"TLSv9\": use one of"},
      {"keepalives_idle=1m", "keepalives_idle is \"1m\": use a whole number"},
      {"sslmode=require&connect_timeout=x", "connect_timeout is \"x\""},
  };
  for (const auto& [query, want] : bad) {
    for (auto mode : {ResultStore::Mode::kCreate, ResultStore::Mode::kExisting}) {
      auto s = ResultStore::Open(base + query, mode);
      ASSERT_FALSE(s.ok()) << query;
      EXPECT_EQ(s.error().exit_code, kExitUsage) << query << ": " << s.error().message;
      EXPECT_NE(s.error().message.find("the results store URL's " + want), std::string::npos)
          << s.error().message;
      EXPECT_EQ(s.error().message.find('\n'), std::string::npos);
    }
    EXPECT_EQ(CheckStoreLocation(base + query).error().exit_code, kExitUsage) << query;
  }
  auto port =
      ResultStore::Open("postgresql://nobody@127.0.0.1:99999/db", ResultStore::Mode::kExisting);
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.error().exit_code, kExitUsage) << port.error().message;
  // Values libpq accepts get as far as connecting.
  auto good =
      ResultStore::Open(base +
                            "sslmode=verify-full&connect_timeout=5&target_session_attrs=read-write&"
                            "gssencmode=disable&channel_binding=prefer&keepalives=1",
                        ResultStore::Mode::kExisting);
  ASSERT_FALSE(good.ok());
  EXPECT_EQ(good.error().exit_code, kExitRuntime) << good.error().message;
  EXPECT_NE(good.error().message.find("is the server running"), std::string::npos)
      << good.error().message;
}

}  // namespace
}  // namespace kstacklab::store
