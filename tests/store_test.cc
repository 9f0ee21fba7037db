// The SQLite results store: round trips, listing, ids, schema versioning, concurrent writers,
// and store ids in LoadResultInput().
#include "kstacklab/store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "kstacklab/fileio.h"
#include "kstacklab/load.h"

namespace kstacklab {
namespace {

namespace fs = std::filesystem;

RunResult Sample(const std::string& label) {
  RunResult r;
  r.tool_version = "0.1.0";
  r.created = "2026-11-29T12:00:00Z";
  r.label = label;
  r.environment = Json{{"kernel", {{"release", "6.18.0-test"}, {"hostname", "testbox"}}}};
  r.run.iterations = 1000;
  r.run.repetitions = 2;
  r.timer = TimerInfo{"fake", 1e9, 12.5, true, std::nullopt};
  for (const char* variant : {"off", "percpu-prng"}) {
    BenchmarkResult b;
    b.name = "model/kstack";
    b.variant = variant;
    for (int i = 0; i < 2; ++i) {
      Repetition rep;
      rep.iterations = 1000;
      rep.metrics = {{"mean", 100.25 + i}, {"p99", 150.0 + i}};
      b.repetitions.push_back(rep);
    }
    b.histogram.RecordN(100000, 1500);
    b.histogram.RecordN(250000, 500);
    r.benchmarks.push_back(std::move(b));
  }
  BenchmarkResult g;
  g.name = "syscall/getpid";
  g.params = Json{{"h", 1}};
  g.repetitions.push_back(Repetition{1000, 0, {{"mean", 210.0}}, std::nullopt, std::nullopt});
  r.benchmarks.push_back(std::move(g));
  return r;
}

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

TEST_F(StoreTest, InsertThenGetReturnsTheSameDocument) {
  ResultStore store = OpenOrDie();
  RunResult r = Sample("baseline");
  int64_t id = InsertOrDie(store, r);
  EXPECT_EQ(id, 1);
  auto doc = store.Document(id);
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ(*doc, ResultToJson(r));
  auto back = store.Get(id);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(ResultToJson(*back), ResultToJson(r));
  EXPECT_EQ(back->benchmarks.size(), 3u);
  EXPECT_EQ(back->benchmarks[0].histogram.count(), 2000u);
  EXPECT_DOUBLE_EQ(back->timer.overhead_ns, 12.5);
}

TEST_F(StoreTest, CreatesParentDirectoriesAndUsesWalAndSchemaVersion) {
  { ResultStore store = OpenOrDie(); }
  EXPECT_TRUE(fs::exists(path_));
  EXPECT_EQ(RawQuery(path_, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(RawQuery(path_, "PRAGMA user_version"), std::to_string(kStoreSchemaVersion));
}

TEST_F(StoreTest, IdsIncreaseAndListShowsEveryRun) {
  ResultStore store = OpenOrDie();
  EXPECT_EQ(InsertOrDie(store, Sample("a")), 1);
  EXPECT_EQ(InsertOrDie(store, Sample("b")), 2);
  RunResult c = Sample("c");
  c.environment = Json::object();  // no capture: kernel and host unknown
  c.partial = true;
  EXPECT_EQ(InsertOrDie(store, c), 3);

  auto list = store.List();
  ASSERT_TRUE(list.ok()) << list.error().message;
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].id, 1);
  EXPECT_EQ((*list)[0].label, "a");
  EXPECT_EQ((*list)[0].created, "2026-11-29T12:00:00Z");
  EXPECT_EQ((*list)[0].kernel_release, "6.18.0-test");
  EXPECT_EQ((*list)[0].host, "testbox");
  EXPECT_FALSE((*list)[0].partial);
  EXPECT_FALSE((*list)[0].stored_at.empty());
  // Variants of one benchmark are listed once, in file order.
  EXPECT_EQ((*list)[0].benchmarks, (std::vector<std::string>{"model/kstack", "syscall/getpid"}));
  EXPECT_EQ((*list)[2].label, "c");
  EXPECT_EQ((*list)[2].kernel_release, "");
  EXPECT_EQ((*list)[2].host, "");
  EXPECT_TRUE((*list)[2].partial);

  auto info = store.Info(2);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->label, "b");
  EXPECT_EQ(info->benchmarks.size(), 2u);
}

TEST_F(StoreTest, BenchmarkRowsAreQueryable) {
  {
    ResultStore store = OpenOrDie();
    InsertOrDie(store, Sample("a"));
  }
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM benchmarks WHERE run_id = 1"), "3");
  EXPECT_EQ(RawQuery(path_, "SELECT params FROM benchmarks WHERE name = 'syscall/getpid'"),
            "{\"h\":1}");
  EXPECT_EQ(RawQuery(path_, "SELECT variant FROM benchmarks WHERE position = 1"), "percpu-prng");
}

TEST_F(StoreTest, MissingIdIsAUsageError) {
  ResultStore store = OpenOrDie();
  InsertOrDie(store, Sample("a"));
  auto r = store.Get(17);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, kExitUsage);
  EXPECT_EQ(r.error().message,
            "no result with id 17 in " + path_ + " (see `kstacklab results list`)");
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

TEST_F(StoreTest, RefusesAStoreFromANewerVersionWithoutTouchingIt) {
  {
    ResultStore store = OpenOrDie();
    InsertOrDie(store, Sample("a"));
  }
  RawExec(path_, "PRAGMA user_version = 2");
  for (auto mode : {ResultStore::Mode::kCreate, ResultStore::Mode::kExisting}) {
    auto s = ResultStore::Open(path_, mode);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().exit_code, kExitUsage);
    EXPECT_NE(s.error().message.find("schema version 2, newer than this kstacklab understands (1)"),
              std::string::npos)
        << s.error().message;
  }
  EXPECT_EQ(RawQuery(path_, "PRAGMA user_version"), "2");
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM runs"), "1");
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

TEST_F(StoreTest, InsertAllIsAllOrNothing) {
  auto s = OpenOrDie();
  auto ids = s.InsertAll({Sample("a"), Sample("b")});
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  ASSERT_EQ(ids->size(), 2u);
  EXPECT_EQ((*ids)[1], (*ids)[0] + 1);
  // A trigger refusing the label "bad" makes the second insert fail: the first is rolled back.
  RawExec(path_,
          "CREATE TRIGGER no_bad BEFORE INSERT ON runs WHEN NEW.label = 'bad' "
          "BEGIN SELECT RAISE(ABORT, 'refused'); END");
  auto again = s.InsertAll({Sample("good"), Sample("bad")});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM runs"), "2");
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM runs WHERE label = 'good'"), "0");
}

// Issue 29: a result is stored only if it can be read back — its stored document within the
// reader's limit (ResultLimits::kMaxFileBytes) — and nothing of the import is written otherwise.
TEST_F(StoreTest, RefusesAResultTooLargeToReadBack) {
  auto s = OpenOrDie();
  RunResult big = Sample("big");
  big.environment["padding"] = std::string(ResultLimits::kMaxFileBytes, 'x');
  auto ids = s.InsertAll({Sample("small"), big});
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.error().exit_code, kExitUsage);
  EXPECT_NE(ids.error().message.find("to be read back"), std::string::npos) << ids.error().message;
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM runs"), "0");
}

// Issue 29: no kstacklab writes a negative user_version: such a file is not a store.
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

// Issue 29: a store path ending in '/' and one under /proc are refused before any work.
TEST_F(StoreTest, StoreLocationsThatCannotHoldAStoreAreRefusedFirst) {
  for (const std::string& bad : {dir_ + "/new/", std::string("/proc/kstacklab/results.db")}) {
    Status st = CheckStoreLocation(bad);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.error().exit_code, kExitUsage) << bad;
  }
  EXPECT_FALSE(fs::exists(dir_ + "/new"));
  EXPECT_TRUE(CheckStoreLocation(dir_ + "/fresh/results.db").ok());
}

// Issue 29: the store's own messages say what is wrong: a table without a column it needs is
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
  EXPECT_EQ(*ParseStoreId("17"), 17);
  EXPECT_EQ(*ParseStoreId("id:17"), 17);
  EXPECT_EQ(*ParseStoreId("999999999999999999"), 999999999999999999);
  for (const char* bad :
       {"0", "id:0", "-1", "+1", " 1", "0x10", "", "id:", "1e3", "9999999999999999999"}) {
    auto id = ParseStoreId(bad);
    ASSERT_FALSE(id.ok()) << bad;
    EXPECT_EQ(id.error().exit_code, kExitUsage);
    EXPECT_NE(id.error().message.find("is not a store id"), std::string::npos) << bad;
  }
}

TEST_F(StoreTest, TwoProcessesInsertingAtOnceBothSucceed) {
  constexpr int kPerProcess = 30;
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  pid_t pids[2];
  for (int p = 0; p < 2; ++p) {
    pids[p] = ::fork();
    ASSERT_GE(pids[p], 0);
    if (pids[p] == 0) {
      ::close(go[1]);
      char c;
      if (::read(go[0], &c, 1) != 0) ::_exit(10);  // released when the parent closes the pipe
      // Both children also race to create the store file and its tables.
      for (int i = 0; i < kPerProcess; ++i) {
        auto id = RecordInStore(Sample(fmt::format("p{}-{}", p, i)), path_);
        if (!id.ok()) {
          std::fprintf(stderr, "child %d: %s\n", p, id.error().message.c_str());
          ::_exit(1);
        }
      }
      ::_exit(0);
    }
  }
  ::close(go[0]);
  ::close(go[1]);
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  ResultStore store = OpenOrDie(ResultStore::Mode::kExisting);
  auto list = store.List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u * kPerProcess);
  std::set<std::string> labels;
  std::set<int64_t> ids;
  for (const StoredRunInfo& info : *list) {
    labels.insert(info.label);
    ids.insert(info.id);
    EXPECT_EQ(info.benchmarks.size(), 2u);
  }
  EXPECT_EQ(labels.size(), 2u * kPerProcess);
  EXPECT_EQ(*ids.begin(), 1);
  EXPECT_EQ(*ids.rbegin(), 2 * kPerProcess);
}

TEST_F(StoreTest, LoadResultInputResolvesStoreIds) {
  ASSERT_TRUE(RecordInStore(Sample("first"), path_).ok());
  ASSERT_TRUE(RecordInStore(Sample("second"), path_).ok());
  auto a = LoadResultInput("2", path_);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->label, "second");
  auto b = LoadResultInput("id:1", path_);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->label, "first");

  auto missing = LoadResultInput("17", path_);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().exit_code, kExitUsage);
  EXPECT_EQ(missing.error().message,
            "no result with id 17 in " + path_ + " (see `kstacklab results list`)");

  auto no_store = LoadResultInput("3", dir_ + "/none.db");
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

TEST(StoreDefaultPath, FollowsXdgDataHome) {
  const char* old = std::getenv("XDG_DATA_HOME");
  std::string saved = old ? old : "";
  ::setenv("XDG_DATA_HOME", "/tmp/xdg-test", 1);
  EXPECT_EQ(DefaultStorePath(), "/tmp/xdg-test/kstacklab/results.db");
  if (old)
    ::setenv("XDG_DATA_HOME", saved.c_str(), 1);
  else
    ::unsetenv("XDG_DATA_HOME");
}

}  // namespace
}  // namespace kstacklab
