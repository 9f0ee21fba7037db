// The results store's behaviour, the same tests on both backends: an embedded SQLite file and a
// PostgreSQL database (a throw-away server that scripts/pg-test-server.sh starts as a ctest
// fixture; its connection comes from the file KSTACKLAB_TEST_PG_ENV names). Round trips, ids,
// listing, all-or-nothing inserts, schema versions, foreign tables, read-only opens, concurrent
// writers and readers, copying between the two, and, on PostgreSQL, what only a server has:
// credentials, encodings, privileges, a connection killed mid-transaction.
//
// Without a server (no PostgreSQL installed) the PostgreSQL cases are skipped, unless
// KSTACKLAB_REQUIRE_PG=1 (CI), where a missing server fails them.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kstacklab/loader/load.h"
#include "kstacklab/store/store.h"
#include "test_support.h"

namespace kstacklab::store {
namespace {

namespace fs = std::filesystem;

RunResult Sample(const std::string& label) { return testing_support::SampleResult(label); }

// The throw-away server's settings (KEY='value' lines), or empty when there is none.
std::map<std::string, std::string> PgSettings() {
  std::map<std::string, std::string> out;
  const char* file = std::getenv("KSTACKLAB_TEST_PG_ENV");
  if (file == nullptr) return out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos || line.size() < eq + 3) continue;
    out[line.substr(0, eq)] = line.substr(eq + 2, line.size() - eq - 3);  // strip the quotes
  }
  return out;
}

bool PgRequired() {
  const char* r = std::getenv("KSTACKLAB_REQUIRE_PG");
  return r != nullptr && std::string(r) == "1";
}

// Raw SQL on one connection, for setting up states kstacklab never writes itself and for
// checking what is stored behind its back.
class RawPg {
 public:
  explicit RawPg(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
    EXPECT_EQ(PQstatus(conn_), CONNECTION_OK) << PQerrorMessage(conn_);
    Exec("SET client_min_messages = warning");
  }
  ~RawPg() { PQfinish(conn_); }
  RawPg(const RawPg&) = delete;
  RawPg& operator=(const RawPg&) = delete;

  // The first column of the first row ("" for none), or "ERROR: …".
  std::string Query(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    std::string out;
    const auto status = PQresultStatus(r);
    if (status == PGRES_TUPLES_OK && PQntuples(r) > 0) {
      out = PQgetvalue(r, 0, 0);
    } else if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
      out = std::string("ERROR: ") + PQerrorMessage(conn_);
    }
    PQclear(r);
    return out;
  }
  void Exec(const std::string& sql) {
    const std::string r = Query(sql);
    EXPECT_EQ(r.rfind("ERROR", 0), std::string::npos) << sql << ": " << r;
  }

 private:
  PGconn* conn_;
};

enum class Kind { kSqlite, kPostgres };

std::string KindName(const ::testing::TestParamInfo<Kind>& info) {
  return info.param == Kind::kSqlite ? "Sqlite" : "Postgres";
}

// One empty store per test: a file in a fresh directory, or a fresh schema in the test database
// (the URL's search_path names it), dropped afterwards.
class StoreBackendTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (GetParam() == Kind::kSqlite) {
      char tmpl[] = "/tmp/kstacklab-store-backends-XXXXXX";
      ASSERT_NE(::mkdtemp(tmpl), nullptr);
      dir_ = tmpl;
      store_ = dir_ + "/results.db";
      return;
    }
    pg_ = PgSettings();
    if (pg_.empty()) {
      if (PgRequired()) FAIL() << "no PostgreSQL test server (KSTACKLAB_TEST_PG_ENV)";
      GTEST_SKIP() << "no PostgreSQL test server: scripts/pg-test-server.sh starts one";
    }
    ::setenv("PGPASSFILE", pg_["PGPASSFILE"].c_str(), 1);
    static std::atomic<int> counter{0};
    schema_ = fmt::format("t{}_{}", ::getpid(), counter++);
    raw_ = std::make_unique<RawPg>(Conninfo(""));
    raw_->Exec("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE");
    raw_->Exec("CREATE SCHEMA " + schema_);
    raw_->Exec("SET search_path = " + schema_);
    store_ = pg_["KSTACKLAB_TEST_PG_URL"] + "?options=-csearch_path%3D" + schema_;
  }
  void TearDown() override {
    if (raw_) {
      raw_->Exec("RESET search_path");
      raw_->Exec("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE");
    }
    raw_.reset();
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
  }
  // The test role's libpq connection string (for the raw connection), `extra` appended.
  std::string Conninfo(const std::string& extra) { return pg_["KSTACKLAB_TEST_PG_URL"] + extra; }

  bool Postgres() const { return GetParam() == Kind::kPostgres; }

  // Raw SQL on the store (SQLite file or this test's schema).
  std::string Query(const std::string& sql) {
    if (Postgres()) return raw_->Query(sql);
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(store_.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
      out = std::string("ERROR: ") + sqlite3_errmsg(db);
    } else if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != nullptr) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  }
  void Exec(const std::string& sql) {
    if (Postgres()) return raw_->Exec(sql);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(store_.c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  // Sets the stored schema version behind kstacklab's back.
  void SetVersion(int v) {
    Exec(Postgres() ? fmt::format("UPDATE kstacklab_store SET schema_version = {}", v)
                    : fmt::format("PRAGMA user_version = {}", v));
  }
  std::string Version() {
    return Query(Postgres() ? "SELECT schema_version FROM kstacklab_store" : "PRAGMA user_version");
  }

  ResultStore OpenOrDie(ResultStore::Mode mode = ResultStore::Mode::kCreate) {
    auto s = ResultStore::Open(store_, mode);
    if (!s.ok()) ADD_FAILURE() << s.error().message;
    return std::move(s).value();
  }
  static int64_t InsertOrDie(ResultStore& s, const RunResult& r) {
    auto id = s.Insert(r);
    if (!id.ok()) ADD_FAILURE() << id.error().message;
    return id.ok() ? *id : -1;
  }

  std::map<std::string, std::string> pg_;
  std::unique_ptr<RawPg> raw_;
  std::string schema_;
  std::string dir_;
  std::string store_;  // the path or URL
};

TEST_P(StoreBackendTest, InsertThenGetReturnsTheSameDocument) {
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
  EXPECT_EQ(Version(), std::to_string(kStoreSchemaVersion));
}

TEST_P(StoreBackendTest, IdsIncreaseAndListShowsEveryRun) {
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
  EXPECT_TRUE(IsUtcTimestamp((*list)[0].stored_at)) << (*list)[0].stored_at;
  // Variants of one benchmark are listed once, in file order.
  EXPECT_EQ((*list)[0].benchmarks, (std::vector<std::string>{"model/kstack", "syscall/getpid"}));
  EXPECT_EQ((*list)[2].kernel_release, "");
  EXPECT_EQ((*list)[2].host, "");
  EXPECT_TRUE((*list)[2].partial);

  auto info = store.Info(2);
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->label, "b");
  EXPECT_EQ(info->benchmarks.size(), 2u);
  // The index rows, for queries without parsing documents.
  EXPECT_EQ(Query("SELECT count(*) FROM benchmarks WHERE run_id = 1"), "3");
  EXPECT_EQ(Query("SELECT params FROM benchmarks WHERE name = 'syscall/getpid' AND run_id = 1"),
            "{\"h\":1}");
  EXPECT_EQ(Query("SELECT variant FROM benchmarks WHERE position = 1 AND run_id = 1"),
            "percpu-prng");
}

TEST_P(StoreBackendTest, MissingIdIsAUsageErrorNamingTheStore) {
  ResultStore store = OpenOrDie();
  InsertOrDie(store, Sample("a"));
  for (auto mode : {ResultStore::Mode::kCreate, ResultStore::Mode::kExisting}) {
    ResultStore s = OpenOrDie(mode);
    auto r = s.Get(17);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().exit_code, kExitUsage);
    EXPECT_EQ(r.error().message,
              "no result with id 17 in " + store_ + " (see `kstacklab results list`)");
    EXPECT_FALSE(s.Info(17).ok());
  }
}

TEST_P(StoreBackendTest, InsertAllIsAllOrNothing) {
  ResultStore s = OpenOrDie();
  auto ids = s.InsertAll({Sample("a"), Sample("b")});
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  ASSERT_EQ(ids->size(), 2u);
  EXPECT_EQ((*ids)[1], (*ids)[0] + 1);
  // A trigger refusing the label "bad" makes the second insert fail inside the transaction,
  // after the first run's rows are written: they are rolled back.
  if (Postgres()) {
    Exec(
        "CREATE FUNCTION no_bad() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.label = "
        "'bad' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$");
    Exec("CREATE TRIGGER no_bad BEFORE INSERT ON runs FOR EACH ROW EXECUTE FUNCTION no_bad()");
  } else {
    Exec(
        "CREATE TRIGGER no_bad BEFORE INSERT ON runs WHEN NEW.label = 'bad' "
        "BEGIN SELECT RAISE(ABORT, 'refused'); END");
  }
  auto again = s.InsertAll({Sample("good"), Sample("bad")});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().exit_code, kExitRuntime);
  EXPECT_NE(again.error().message.find("refused"), std::string::npos) << again.error().message;
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), "2");
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE label = 'good'"), "0");
  EXPECT_EQ(Query("SELECT count(*) FROM benchmarks"), "6");
  // The handle is still usable after the rollback, and no id is handed out twice.
  EXPECT_GT(InsertOrDie(s, Sample("after")), 2);
}

TEST_P(StoreBackendTest, RefusesAResultTooLargeToReadBack) {
  ResultStore s = OpenOrDie();
  RunResult big = Sample("big");
  big.environment["padding"] = std::string(ResultLimits::kMaxFileBytes, 'x');
  auto ids = s.InsertAll({Sample("small"), big});
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.error().exit_code, kExitUsage);
  EXPECT_NE(ids.error().message.find("to be read back"), std::string::npos) << ids.error().message;
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), "0");
}

TEST_P(StoreBackendTest, RefusesAStoreFromANewerVersionWithoutTouchingIt) {
  {
    ResultStore store = OpenOrDie();
    InsertOrDie(store, Sample("a"));
  }
  SetVersion(2);
  for (auto mode : {ResultStore::Mode::kCreate, ResultStore::Mode::kExisting}) {
    auto s = ResultStore::Open(store_, mode);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().exit_code, kExitUsage);
    EXPECT_NE(s.error().message.find("schema version 2, newer than this kstacklab understands (1)"),
              std::string::npos)
        << s.error().message;
    EXPECT_NE(s.error().message.find("use a newer kstacklab"), std::string::npos);
  }
  EXPECT_FALSE(CheckStoreLocation(store_).ok());
  EXPECT_EQ(Version(), "2");
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), "1");
}

TEST_P(StoreBackendTest, RefusesTablesThatAreNotAStoreAndLeavesThemAlone) {
  Exec("CREATE TABLE runs(x integer)");
  for (auto mode : {ResultStore::Mode::kCreate, ResultStore::Mode::kExisting}) {
    auto s = ResultStore::Open(store_, mode);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().exit_code, kExitUsage);
    EXPECT_NE(s.error().message.find("not a kstacklab results store"), std::string::npos)
        << s.error().message;
  }
  EXPECT_EQ(CheckStoreLocation(store_).error().exit_code, kExitUsage);
  EXPECT_EQ(Query("SELECT count(*) FROM benchmarks").rfind("ERROR", 0), 0u)
      << "no tables were created beside the foreign one";
}

TEST_P(StoreBackendTest, AnEmptyStoreReadsAsEmptyAndReadingCreatesNothing) {
  if (!Postgres()) {
    std::ofstream(store_).close();  // a 0-byte file: SQLite's empty store
  }
  EXPECT_TRUE(CheckStoreLocation(store_).ok());
  ResultStore r = OpenOrDie(ResultStore::Mode::kExisting);
  auto list = r.List();
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_TRUE(list->empty());
  EXPECT_EQ(r.Document(1).error().exit_code, kExitUsage);
  EXPECT_FALSE(r.Insert(Sample("a")).ok());
  EXPECT_EQ(Query("SELECT count(*) FROM runs").rfind("ERROR", 0), 0u) << "no tables created";
}

TEST_P(StoreBackendTest, AReadOnlyHandleNeverWrites) {
  ASSERT_TRUE(RecordInStore(Sample("a"), store_).ok());
  ResultStore r = OpenOrDie(ResultStore::Mode::kExisting);
  auto rows = r.List();
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  EXPECT_EQ(rows->size(), 1u);
  auto id = r.Insert(Sample("b"));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), "1");
}

TEST_P(StoreBackendTest, LoadResultInputResolvesStoreIds) {
  ASSERT_TRUE(RecordInStore(Sample("first"), store_).ok());
  ASSERT_TRUE(RecordInStore(Sample("second"), store_).ok());
  auto a = loader::LoadResultInput("2", store_);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->label, "second");
  auto b = loader::LoadResultInput("id:1", store_);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->label, "first");
  auto missing = loader::LoadResultInput("17", store_);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().exit_code, kExitUsage);
}

// Four writer processes at once, 50 runs each, while a reader lists again and again: every run
// arrives whole (its three benchmark rows with it), none is lost or mixed with another, and the
// reader never sees a run without all of its rows.
TEST_P(StoreBackendTest, FourWritersAndAReaderAtOnce) {
  constexpr int kWriters = 4;
  constexpr int kPerWriter = 50;
  { ResultStore create = OpenOrDie(); }  // the writers also race on the tables otherwise
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> pids;
  for (int p = 0; p <= kWriters; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid != 0) {
      pids.push_back(pid);
      continue;
    }
    ::close(go[1]);
    char c;
    if (::read(go[0], &c, 1) != 0) ::_exit(10);  // released when the parent closes the pipe
    if (p == kWriters) {                         // the reader
      for (int round = 0; round < 200; ++round) {
        auto s = ResultStore::Open(store_, ResultStore::Mode::kExisting);
        if (!s.ok()) ::_exit(20);
        auto list = s->List();
        if (!list.ok()) ::_exit(21);
        for (const StoredRunInfo& info : *list) {
          if (info.benchmarks.size() != 2) ::_exit(22);  // a run without all its rows
        }
        if (list->size() == kWriters * kPerWriter) break;
      }
      ::_exit(0);
    }
    for (int i = 0; i < kPerWriter; ++i) {
      RunResult r = Sample(fmt::format("w{}-{}", p, i));
      r.benchmarks[2].params = Json{{"writer", p}, {"i", i}};
      auto id = RecordInStore(r, store_);
      if (!id.ok()) {
        std::fprintf(stderr, "writer %d: %s\n", p, id.error().message.c_str());
        ::_exit(1);
      }
    }
    ::_exit(0);
  }
  ::close(go[0]);
  ::close(go[1]);
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "process " << pid;
  }
  ResultStore store = OpenOrDie(ResultStore::Mode::kExisting);
  auto list = store.List();
  ASSERT_TRUE(list.ok()) << list.error().message;
  ASSERT_EQ(list->size(), size_t{kWriters * kPerWriter});
  std::set<std::string> labels;
  std::set<int64_t> ids;
  for (const StoredRunInfo& info : *list) {
    labels.insert(info.label);
    ids.insert(info.id);
  }
  EXPECT_EQ(labels.size(), size_t{kWriters * kPerWriter});
  EXPECT_EQ(ids.size(), size_t{kWriters * kPerWriter});
  // Not mixed: each run's document and index rows belong to its own label.
  for (int64_t id : {*ids.begin(), *ids.rbegin()}) {
    auto r = store.Get(id);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const std::string want = fmt::format("w{}-{}", r->benchmarks[2].params["writer"].get<int>(),
                                         r->benchmarks[2].params["i"].get<int>());
    EXPECT_EQ(r->label, want);
  }
  EXPECT_EQ(Query("SELECT count(*) FROM benchmarks"), std::to_string(3 * kWriters * kPerWriter));
  EXPECT_EQ(Query("SELECT count(*) FROM runs r WHERE (SELECT count(*) FROM benchmarks b WHERE "
                  "b.run_id = r.id) <> 3"),
            "0");
}

// A SQLite store of `n` distinct runs (labels src0, src1, …) in `dir`: what the copies copy.
std::string MakeSource(const std::string& dir, int n) {
  const std::string path = dir + "/source.db";
  auto s = ResultStore::Open(path, ResultStore::Mode::kCreate);
  EXPECT_TRUE(s.ok()) << s.error().message;
  std::vector<RunResult> runs;
  for (int i = 0; i < n; ++i) runs.push_back(Sample(fmt::format("src{}", i)));
  auto ids = s->InsertAll(runs);
  EXPECT_TRUE(ids.ok()) << ids.error().message;
  return path;
}

// A directory for the source store (the SQLite case's own directory, or a new one).
std::string SourceDir(std::string& dir) {
  if (dir.empty()) {
    char tmpl[] = "/tmp/kstacklab-store-copy-XXXXXX";
    EXPECT_NE(::mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  return dir;
}

// The race of two copies, made to happen every time: copy A reads what the target holds, then,
// after its first batch, copy B copies everything; A's later batches were found missing when A
// looked, but B has stored them since. The check under the insert's lock finds them.
TEST_P(StoreBackendTest, ACopyDoesNotStoreAgainWhatAnotherCopyStoredMeanwhile) {
  constexpr int kRuns = 6;
  const std::string source = MakeSource(SourceDir(dir_), kRuns);
  auto from = ResultStore::Open(source, ResultStore::Mode::kExisting);
  ResultStore to = OpenOrDie();
  ASSERT_TRUE(from.ok()) << from.error().message;
  std::optional<CopyOutcome> other;
  auto outcome = CopyRuns(*from, to, 1, [&](size_t, size_t) {
    if (other) return;
    auto f = ResultStore::Open(source, ResultStore::Mode::kExisting);
    ResultStore t = OpenOrDie();
    auto out = CopyRuns(*f, t, 100, {});
    ASSERT_TRUE(out.ok()) << out.error().message;
    other = *out;
  });
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(outcome->copied.size(), 1u);
  EXPECT_EQ(outcome->present.size(), size_t{kRuns - 1});
  EXPECT_EQ(other->copied.size(), size_t{kRuns - 1});
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), std::to_string(kRuns));
  EXPECT_EQ(Query("SELECT count(DISTINCT label) FROM runs"), std::to_string(kRuns));
  EXPECT_EQ(Query("SELECT count(*) FROM benchmarks"), std::to_string(3 * kRuns));
}

// Four processes copy one source into one store at once: each run is stored once.
TEST_P(StoreBackendTest, FourCopiesAtOnceStoreEachRunOnce) {
  constexpr int kCopies = 4;
  constexpr int kRuns = 40;
  const std::string source = MakeSource(SourceDir(dir_), kRuns);
  { ResultStore create = OpenOrDie(); }
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> pids;
  for (int p = 0; p < kCopies; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid != 0) {
      pids.push_back(pid);
      continue;
    }
    ::close(go[1]);
    auto from = ResultStore::Open(source, ResultStore::Mode::kExisting);
    auto to = ResultStore::Open(store_, ResultStore::Mode::kCreate);
    if (!from.ok() || !to.ok()) ::_exit(20);
    char c;
    if (::read(go[0], &c, 1) != 0) ::_exit(10);  // all start when the parent closes the pipe
    auto out = CopyRuns(*from, *to, 10, {});
    if (!out.ok()) {
      std::fprintf(stderr, "copy %d: %s\n", p, out.error().message.c_str());
      ::_exit(1);
    }
    ::_exit(0);
  }
  ::close(go[0]);
  ::close(go[1]);
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "process " << pid;
  }
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), std::to_string(kRuns));
  EXPECT_EQ(Query("SELECT count(DISTINCT label) FROM runs"), std::to_string(kRuns));
  EXPECT_EQ(Query("SELECT count(*) FROM benchmarks"), std::to_string(3 * kRuns));
}

// A store made before the copy check's index gets it on its next write open, whatever it holds
// (duplicates included: the index is not unique), and copying into it still stores nothing twice.
TEST_P(StoreBackendTest, AStoreWithoutTheCopyIndexGetsItAndKeepsItsDuplicates) {
  {
    ResultStore s = OpenOrDie();
    auto ids = s.InsertAll({Sample("x"), Sample("x"), Sample("y")});
    ASSERT_TRUE(ids.ok()) << ids.error().message;
  }
  Exec("DROP INDEX runs_by_created_label");
  const std::string has_index =
      Postgres() ? "SELECT count(*) FROM pg_indexes WHERE indexname = 'runs_by_created_label'"
                 : "SELECT count(*) FROM sqlite_master WHERE name = 'runs_by_created_label'";
  { ResultStore reader = OpenOrDie(ResultStore::Mode::kExisting); }
  EXPECT_EQ(Query(has_index), "0") << "a read-only open changes nothing";
  ResultStore s = OpenOrDie();
  EXPECT_EQ(Query(has_index), "1");
  EXPECT_EQ(Version(), "1");
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), "3");
  auto again = s.InsertDocuments({ResultToJson(Sample("x")), ResultToJson(Sample("z"))},
                                 {Sample("x"), Sample("z")});
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ((*again)[0].id, 1);
  EXPECT_FALSE((*again)[0].added);
  EXPECT_TRUE((*again)[1].added);
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), "4");
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreBackendTest,
                         ::testing::Values(Kind::kSqlite, Kind::kPostgres), KindName);

// ---- PostgreSQL only ---------------------------------------------------------------------------

class PostgresStoreTest : public StoreBackendTest {};

TEST_P(PostgresStoreTest, APasswordInTheUrlIsRefusedBeforeConnecting) {
  const std::string password = pg_["KSTACKLAB_TEST_PG_PASSWORD"];
  const std::string base = pg_["KSTACKLAB_TEST_PG_URL"];
  const std::string with_user =
      "postgresql://kstacklab_test:" + password + "@" + base.substr(base.find('@') + 1);
  for (const std::string& url : {with_user, base + "?password=" + password}) {
    for (auto mode : {ResultStore::Mode::kCreate, ResultStore::Mode::kExisting}) {
      auto s = ResultStore::Open(url, mode);
      ASSERT_FALSE(s.ok()) << url;
      EXPECT_EQ(s.error().exit_code, kExitUsage);
      EXPECT_NE(s.error().message.find("~/.pgpass"), std::string::npos) << s.error().message;
      EXPECT_EQ(s.error().message.find(password), std::string::npos) << s.error().message;
    }
    EXPECT_FALSE(CheckStoreLocation(url).ok());
  }
}

TEST_P(PostgresStoreTest, CredentialsComeFromThePassFileOnly) {
  // The URL has no password: it comes from PGPASSFILE (set in SetUp). Without it, refused with
  // the remedy, and the error never shows the password.
  const std::string saved = pg_["PGPASSFILE"];
  ::setenv("PGPASSFILE", "/nonexistent/pgpass", 1);
  auto s = ResultStore::Open(store_, ResultStore::Mode::kCreate);
  ::setenv("PGPASSFILE", saved.c_str(), 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().exit_code, kExitUsage);
  EXPECT_NE(s.error().message.find("password"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("~/.pgpass"), std::string::npos) << s.error().message;
  ASSERT_TRUE(RecordInStore(Sample("a"), store_).ok());
  // Nothing stored carries the password.
  EXPECT_EQ(Query(fmt::format("SELECT count(*) FROM runs WHERE document LIKE '%{}%'",
                              pg_["KSTACKLAB_TEST_PG_PASSWORD"])),
            "0");
}

TEST_P(PostgresStoreTest, WrongServersDatabasesAndEncodingsSayWhatToDo) {
  auto down = ResultStore::Open("postgresql://kstacklab_test@127.0.0.1:1/kstacklab_test",
                                ResultStore::Mode::kExisting);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().exit_code, kExitRuntime);
  EXPECT_NE(down.error().message.find("is the server running"), std::string::npos)
      << down.error().message;
  EXPECT_EQ(down.error().message.find('\n'), std::string::npos);

  const std::string base = pg_["KSTACKLAB_TEST_PG_URL"];
  auto nodb = ResultStore::Open(base.substr(0, base.rfind('/')) + "/no_such_db",
                                ResultStore::Mode::kExisting);
  ASSERT_FALSE(nodb.ok());
  EXPECT_EQ(nodb.error().exit_code, kExitUsage);
  EXPECT_NE(nodb.error().message.find("does not exist"), std::string::npos);

  auto latin1 = ResultStore::Open(pg_["KSTACKLAB_TEST_PG_LATIN1_URL"], ResultStore::Mode::kCreate);
  ASSERT_FALSE(latin1.ok());
  EXPECT_EQ(latin1.error().exit_code, kExitUsage);
  EXPECT_NE(latin1.error().message.find("ENCODING 'UTF8'"), std::string::npos)
      << latin1.error().message;

  auto garbage = ResultStore::Open("postgresql://[::1", ResultStore::Mode::kExisting);
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().exit_code, kExitUsage);
}

TEST_P(PostgresStoreTest, ARoleWithoutPrivilegesIsToldWhatToAskFor) {
  ASSERT_TRUE(RecordInStore(Sample("a"), store_).ok());
  std::string reader = pg_["KSTACKLAB_TEST_PG_READER_URL"] + "?options=-csearch_path%3D" + schema_;
  raw_->Exec("GRANT USAGE ON SCHEMA " + schema_ + " TO kstacklab_reader");
  auto r = ResultStore::Open(reader, ResultStore::Mode::kExisting);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, kExitRuntime);
  EXPECT_NE(r.error().message.find("permission denied"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("GRANT"), std::string::npos) << r.error().message;
  raw_->Exec("GRANT SELECT ON runs, benchmarks, kstacklab_store TO kstacklab_reader");
  auto r2 = ResultStore::Open(reader, ResultStore::Mode::kCreate);
  ASSERT_TRUE(r2.ok()) << r2.error().message;
  auto listed = r2->List();
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  EXPECT_EQ(listed->size(), 1u);
  auto id = r2->Insert(Sample("b"));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().exit_code, kExitRuntime);
  EXPECT_NE(id.error().message.find("GRANT"), std::string::npos) << id.error().message;
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), "1");
}

// The backend pids of the kstacklab sessions of the test database that wait on a lock of kind
// `event` ("relation": a table lock; "advisory").
std::set<std::string> Waiting(RawPg& admin, const std::string& event) {
  const std::string list = admin.Query(
      "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE application_name = "
      "'kstacklab' AND wait_event_type = 'Lock' AND datname = 'kstacklab_test' AND wait_event = '" +
      event + "'");
  std::set<std::string> pids;
  size_t start = 0;
  while (start < list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    pids.insert(list.substr(start, comma - start));
    start = comma + 1;
  }
  return pids;
}

// Waits up to 8 s (the lock timeout is 10 s) for `n` sessions waiting on `event` that are not in
// `old`; them, or fewer when the time ran out.
std::set<std::string> AwaitWaiting(RawPg& admin, size_t n, const std::string& event,
                                   const std::set<std::string>& old = {}) {
  std::set<std::string> fresh;
  for (int i = 0; i < 400 && fresh.size() < n; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    fresh.clear();
    for (const std::string& pid : Waiting(admin, event)) {
      if (old.count(pid) == 0) fresh.insert(pid);
    }
  }
  return fresh;
}

void Terminate(RawPg& admin, const std::set<std::string>& pids) {
  for (const std::string& pid : pids) admin.Exec("SELECT pg_terminate_backend(" + pid + ")");
}

// A connection killed mid-transaction (pg_terminate_backend while the insert waits on a table
// lock, after its run row is written) is a transient failure: the insert reconnects and tries
// again, and the run is stored once, whole.
TEST_P(PostgresStoreTest, AConnectionKilledMidInsertIsTriedAgainAndStoresTheRunOnce) {
  ASSERT_TRUE(RecordInStore(Sample("before"), store_).ok());
  RawPg locker(Conninfo(""));
  locker.Exec("SET search_path = " + schema_);
  locker.Exec("BEGIN");
  locker.Exec("LOCK TABLE benchmarks IN ACCESS EXCLUSIVE MODE");
  Expected<int64_t> outcome = RuntimeError("not run");
  std::thread writer([&] { outcome = RecordInStore(Sample("killed"), store_); });
  RawPg admin(pg_["KSTACKLAB_TEST_PG_ADMIN"]);
  const std::set<std::string> first = AwaitWaiting(admin, 1, "relation");
  Terminate(admin, first);
  const std::set<std::string> second = AwaitWaiting(admin, 1, "relation", first);
  locker.Exec("COMMIT");
  writer.join();
  EXPECT_EQ(first.size(), 1u) << "the insert never waited on the lock";
  EXPECT_EQ(second.size(), 1u) << "the insert was not tried again on a new connection";
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), "2");
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE label = 'killed'"), "1");
  EXPECT_EQ(Query("SELECT count(*) FROM benchmarks"), "6");
}

// A connection killed at every try: the insert gives up after a bounded number of tries, says
// the connection was lost and how often it tried, and no part of the run is visible.
TEST_P(PostgresStoreTest, AConnectionKilledAtEveryTryFailsAfterBoundedTries) {
  ASSERT_TRUE(RecordInStore(Sample("before"), store_).ok());
  RawPg locker(Conninfo(""));
  locker.Exec("SET search_path = " + schema_);
  locker.Exec("BEGIN");
  locker.Exec("LOCK TABLE benchmarks IN ACCESS EXCLUSIVE MODE");
  std::atomic<bool> done{false};
  Expected<int64_t> outcome = RuntimeError("not run");
  std::thread writer([&] {
    outcome = RecordInStore(Sample("killed"), store_);
    done = true;
  });
  RawPg admin(pg_["KSTACKLAB_TEST_PG_ADMIN"]);
  std::set<std::string> killed;  // every try is a new connection, a new backend pid
  const auto start = std::chrono::steady_clock::now();
  while (!done && std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
    for (const std::string& pid : Waiting(admin, "relation")) {
      if (killed.insert(pid).second) Terminate(admin, {pid});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  writer.join();
  locker.Exec("COMMIT");
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(killed.size(), 4u);
  EXPECT_EQ(outcome.error().exit_code, kExitRuntime);
  EXPECT_NE(outcome.error().message.find("connection to the server was lost"), std::string::npos)
      << outcome.error().message;
  EXPECT_NE(outcome.error().message.find("tried 4 times"), std::string::npos)
      << outcome.error().message;
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), "1");
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE label = 'killed'"), "0");
  EXPECT_EQ(Query("SELECT count(*) FROM benchmarks"), "3");
}

// Four writers start on a store without tables at once, 5 runs each. The race made certain: a
// session holds the lock the table creation takes until all four wait for it, so that all four
// found no tables before the first creates them. Every run is recorded.
TEST_P(PostgresStoreTest, FourFirstWritersOfAFreshStoreRecordEveryRun) {
  constexpr int kWriters = 4;
  constexpr int kPerWriter = 5;
  RawPg holder(Conninfo(""));
  holder.Exec("SELECT pg_advisory_lock(1802728555)");  // kCreateLockKey, "kstk"
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> pids;
  for (int p = 0; p < kWriters; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid != 0) {
      pids.push_back(pid);
      continue;
    }
    ::close(go[1]);
    char c;
    if (::read(go[0], &c, 1) != 0) ::_exit(10);
    for (int i = 0; i < kPerWriter; ++i) {
      auto id = RecordInStore(Sample(fmt::format("w{}-{}", p, i)), store_);
      if (!id.ok()) {
        std::fprintf(stderr, "writer %d: %s\n", p, id.error().message.c_str());
        ::_exit(1);
      }
    }
    ::_exit(0);
  }
  ::close(go[0]);
  ::close(go[1]);
  RawPg admin(pg_["KSTACKLAB_TEST_PG_ADMIN"]);
  EXPECT_EQ(AwaitWaiting(admin, kWriters, "advisory").size(), size_t{kWriters})
      << "the writers never met at the lock";
  holder.Query("SELECT pg_advisory_unlock(1802728555)");
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "process " << pid;
  }
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), std::to_string(kWriters * kPerWriter));
  EXPECT_EQ(Query("SELECT count(DISTINCT label) FROM runs"), std::to_string(kWriters * kPerWriter));
}

// `results copy` SQLite -> PostgreSQL -> SQLite, each twice: the runs arrive once, byte for byte.
TEST_P(PostgresStoreTest, CopyingBothWaysTwiceAddsNoDuplicates) {
  char tmpl[] = "/tmp/kstacklab-store-copy-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  dir_ = tmpl;
  const std::string file = dir_ + "/a.db";
  const std::string back = dir_ + "/b.db";
  {
    auto ids = [&] {
      auto s = ResultStore::Open(file, ResultStore::Mode::kCreate);
      return s->InsertAll({Sample("x"), Sample("y"), Sample("x"), Sample("z")});
    }();
    ASSERT_TRUE(ids.ok()) << ids.error().message;  // "x" twice: the same document twice
  }
  auto copy = [](const std::string& from, const std::string& to) {
    auto f = ResultStore::Open(from, ResultStore::Mode::kExisting);
    auto t = ResultStore::Open(to, ResultStore::Mode::kCreate);
    EXPECT_TRUE(f.ok() && t.ok());
    auto out = CopyRuns(*f, *t, 2, {});
    EXPECT_TRUE(out.ok()) << out.error().message;
    return std::move(out).value();
  };
  CopyOutcome first = copy(file, store_);
  EXPECT_EQ(first.copied.size(), 3u) << "the duplicate document is copied once";
  EXPECT_EQ(copy(file, store_).copied.size(), 0u);
  EXPECT_EQ(copy(file, store_).present.size(), 4u);
  EXPECT_EQ(copy(store_, back).copied.size(), 3u);
  EXPECT_EQ(copy(store_, back).copied.size(), 0u);
  EXPECT_EQ(copy(back, store_).copied.size(), 0u);
  EXPECT_EQ(copy(store_, file).copied.size(), 0u);
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), "3");
  auto pg = ResultStore::Open(store_, ResultStore::Mode::kExisting);
  auto b = ResultStore::Open(back, ResultStore::Mode::kExisting);
  ASSERT_TRUE(pg.ok() && b.ok());
  for (int64_t id = 1; id <= 3; ++id) {
    EXPECT_EQ(*pg->Document(id), *b->Document(id)) << id;
  }
  EXPECT_EQ(*pg->Document(3), ResultToJson(Sample("z")));
}

INSTANTIATE_TEST_SUITE_P(Backends, PostgresStoreTest, ::testing::Values(Kind::kPostgres), KindName);

}  // namespace
}  // namespace kstacklab::store
