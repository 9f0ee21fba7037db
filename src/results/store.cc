// The SQLite results store (docs/store.md).
//
// Schema version 1 (PRAGMA user_version = 1):
//   runs(id, stored_at, created, label, tool_version, kernel_release, host, partial, document)
//     one row per stored result; `document` is the full result JSON as ResultToJson wrote it, so
//     a stored result never loses a field and export is byte-identical to what was stored.
//   benchmarks(run_id, position, name, variant, params, repetitions)
//     one row per benchmark entry, for listing and queries without parsing documents.
// Concurrency: WAL journal, a busy timeout, and BEGIN IMMEDIATE around every write, so two
// `kstacklab run` processes finishing at the same moment both get their rows in.
#include "kstacklab/store.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>
#include <thread>
#include <utility>

namespace kstacklab {
namespace {

constexpr const char* kRemedy =
    "choose a writable location with --store PATH, or skip the store with --no-store";

// One prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool prepared() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return stmt_; }

  void BindText(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  void BindTextOrNull(int i, const std::string& s) {
    if (s.empty())
      sqlite3_bind_null(stmt_, i);
    else
      BindText(i, s);
  }
  void BindInt(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  int Step() { return sqlite3_step(stmt_); }

  std::string Text(int col) {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    if (p == nullptr) return std::string();
    return std::string(reinterpret_cast<const char*>(p),
                       static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
  }
  int64_t Int(int col) { return sqlite3_column_int64(stmt_, col); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
};

std::string StringAt(const Json& doc, const char* pointer) {
  const Json::json_pointer p(pointer);
  if (!doc.contains(p)) return std::string();
  const Json& v = doc.at(p);
  return v.is_string() ? v.get<std::string>() : std::string();
}

constexpr const char* kCreateSchema = R"sql(
CREATE TABLE runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  stored_at TEXT NOT NULL,
  created TEXT NOT NULL,
  label TEXT NOT NULL,
  tool_version TEXT NOT NULL,
  kernel_release TEXT,
  host TEXT,
  partial INTEGER NOT NULL,
  document TEXT NOT NULL
);
CREATE TABLE benchmarks(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  name TEXT NOT NULL,
  variant TEXT NOT NULL,
  params TEXT NOT NULL,
  repetitions INTEGER NOT NULL,
  PRIMARY KEY(run_id, position)
);
CREATE INDEX benchmarks_by_name ON benchmarks(name);
PRAGMA user_version = 1;
)sql";

}  // namespace

std::string StoredKernelRelease(const RunResult& result) {
  return StringAt(result.environment, "/kernel/release");
}

std::string StoredHost(const RunResult& result) {
  // Where the environment capture keeps the node name; the first string found wins.
  for (const char* p : {"/host/hostname", "/host/name", "/kernel/hostname", "/kernel/nodename",
                        "/hostname", "/host"}) {
    std::string s = StringAt(result.environment, p);
    if (!s.empty()) return s;
  }
  return std::string();
}

namespace {
// Binds `id` to a by-id lookup and steps onto its row: a missing id is the user's error.
Status StepToRun(Statement& s, int64_t id, sqlite3* db, const std::string& path) {
  s.BindInt(1, id);
  int rc = s.Step();
  if (rc == SQLITE_DONE) {
    return UsageError(
        fmt::format("no result with id {} in {} (see `kstacklab results list`)", id, path));
  }
  if (rc != SQLITE_ROW) {
    return RuntimeError(
        fmt::format("results store {}: cannot read id {}: {}", path, id, sqlite3_errmsg(db)));
  }
  return OkStatus();
}
}  // namespace

Error ResultStore::DbError(const std::string& what) const {
  return RuntimeError(fmt::format("results store {}: {}: {}", path_, what, sqlite3_errmsg(db_)));
}

ResultStore::ResultStore(ResultStore&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

ResultStore& ResultStore::operator=(ResultStore&& other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

ResultStore::~ResultStore() { sqlite3_close_v2(db_); }

Expected<ResultStore> ResultStore::Open(const std::string& path, Mode mode) {
  if (path.empty()) return UsageError("--store needs a file path (e.g. --store results.db)");
  struct stat st {};
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    return UsageError(fmt::format(
        "--store {} is a directory; give a file path such as {}/results.db", path, path));
  }
  if (!exists && mode == Mode::kExisting) {
    return UsageError(fmt::format(
        "there is no results store at {} yet (`kstacklab run` or `kstacklab results import FILE` "
        "creates it; --store PATH picks another)",
        path));
  }
  if (!exists) {
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(parent, ec);
      if (ec) {
        return RuntimeError(fmt::format("cannot create the results store directory {}: {}; {}",
                                        parent.string(), ec.message(), kRemedy));
      }
    }
  }
  sqlite3* db = nullptr;
  int flags = SQLITE_OPEN_READWRITE | (mode == Mode::kCreate ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return RuntimeError(
        fmt::format("cannot open the results store {}: {}; {}", path, msg, kRemedy));
  }
  ResultStore store(db, path);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  sqlite3_extended_result_codes(db, 1);

  auto read_version = [&]() -> Expected<int> {
    Statement v(db, "PRAGMA user_version");
    if (!v.prepared() || v.Step() != SQLITE_ROW) {
      if ((sqlite3_errcode(db) & 0xff) == SQLITE_NOTADB) {
        return RuntimeError(fmt::format(
            "{} is not a kstacklab results store (not a SQLite database); move it away or pick "
            "another file with --store PATH",
            path));
      }
      return store.DbError("cannot read the schema version");
    }
    return static_cast<int>(v.Int(0));
  };
  auto too_new = [&](int version) {
    return RuntimeError(fmt::format(
        "results store {} has schema version {}, newer than this kstacklab understands ({}); "
        "use a newer kstacklab, or another store with --store PATH",
        path, version, kStoreSchemaVersion));
  };

  auto version = read_version();
  if (!version.ok()) return version.error();
  if (*version > kStoreSchemaVersion) return too_new(*version);

  // WAL lets readers proceed while a writer commits. Switching needs a brief exclusive lock;
  // another process creating the same store at the same moment can hold it, so retry.
  {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
    for (;;) {
      Statement wal(db, "PRAGMA journal_mode=WAL");
      int src = wal.prepared() ? wal.Step() : sqlite3_errcode(db);
      if (src == SQLITE_ROW || src == SQLITE_DONE) break;
      if ((src & 0xff) != SQLITE_BUSY && (src & 0xff) != SQLITE_LOCKED) {
        if ((src & 0xff) == SQLITE_READONLY) break;  // read-only file: readers still work
        return store.DbError("cannot switch to WAL mode");
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return store.DbError("timed out waiting for another process (switching to WAL mode)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  if (sqlite3_exec(db, "PRAGMA foreign_keys=ON", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return store.DbError("cannot enable foreign keys");
  }

  if (*version < kStoreSchemaVersion) {
    // Create the tables under the write lock; re-check: another process may have won the race.
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) {
      Error e = store.DbError("cannot lock the store to create its tables");
      if ((sqlite3_errcode(db) & 0xff) == SQLITE_READONLY ||
          (sqlite3_errcode(db) & 0xff) == SQLITE_CANTOPEN) {
        e.message += std::string("; ") + kRemedy;
      }
      return e;
    }
    auto again = read_version();
    if (!again.ok()) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return again.error();
    }
    if (*again > kStoreSchemaVersion) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return too_new(*again);
    }
    if (*again == 0) {
      Statement count(db, "SELECT count(*) FROM sqlite_master");
      if (!count.prepared() || count.Step() != SQLITE_ROW) {
        sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        return store.DbError("cannot read the table list");
      }
      if (count.Int(0) != 0) {
        sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        return RuntimeError(fmt::format(
            "{} is a SQLite database but not a kstacklab results store; pick another file with "
            "--store PATH",
            path));
      }
      if (sqlite3_exec(db, kCreateSchema, nullptr, nullptr, nullptr) != SQLITE_OK) {
        Error e = store.DbError("cannot create the tables");
        sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        return e;
      }
    }
    if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
      Error e = store.DbError("cannot commit the new tables");
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return e;
    }
  }
  return store;
}

Expected<int64_t> ResultStore::Insert(const RunResult& result) {
  const std::string document = ResultToJson(result);
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return DbError("cannot take the write lock (another kstacklab held it for over 10 s?)");
  }
  auto fail = [&](const std::string& what) {
    Error e = DbError(what);
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return e;
  };
  int64_t id = 0;
  {
    Statement ins(db_,
                  "INSERT INTO runs(stored_at, created, label, tool_version, kernel_release, host, "
                  "partial, document) VALUES(?,?,?,?,?,?,?,?)");
    if (!ins.prepared()) return fail("cannot prepare the insert");
    ins.BindText(1, UtcTimestamp());
    ins.BindText(2, result.created);
    ins.BindText(3, result.label);
    ins.BindText(4, result.tool_version);
    ins.BindTextOrNull(5, StoredKernelRelease(result));
    ins.BindTextOrNull(6, StoredHost(result));
    ins.BindInt(7, result.partial ? 1 : 0);
    ins.BindText(8, document);
    if (ins.Step() != SQLITE_DONE) return fail("cannot insert the result");
    id = sqlite3_last_insert_rowid(db_);
  }
  {
    Statement ins(db_,
                  "INSERT INTO benchmarks(run_id, position, name, variant, params, repetitions) "
                  "VALUES(?,?,?,?,?,?)");
    if (!ins.prepared()) return fail("cannot prepare the benchmark insert");
    for (size_t i = 0; i < result.benchmarks.size(); ++i) {
      const BenchmarkResult& b = result.benchmarks[i];
      sqlite3_reset(ins.get());
      ins.BindInt(1, id);
      ins.BindInt(2, static_cast<int64_t>(i));
      ins.BindText(3, b.name);
      ins.BindText(4, b.variant);
      ins.BindText(5, b.params.dump());
      ins.BindInt(6, static_cast<int64_t>(b.repetitions.size()));
      if (ins.Step() != SQLITE_DONE) return fail("cannot insert a benchmark row");
    }
  }
  if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return fail("cannot commit the insert");
  }
  return id;
}

namespace {

constexpr const char* kInfoColumns =
    "SELECT id, created, stored_at, label, tool_version, kernel_release, host, partial FROM runs";

StoredRunInfo InfoFromRow(Statement& s) {
  StoredRunInfo info;
  info.id = s.Int(0);
  info.created = s.Text(1);
  info.stored_at = s.Text(2);
  info.label = s.Text(3);
  info.tool_version = s.Text(4);
  info.kernel_release = s.Text(5);
  info.host = s.Text(6);
  info.partial = s.Int(7) != 0;
  return info;
}

}  // namespace

Expected<std::vector<StoredRunInfo>> ResultStore::List() {
  // One read transaction: a consistent snapshot even while another process inserts.
  if (sqlite3_exec(db_, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return DbError("cannot start reading");
  }
  std::vector<StoredRunInfo> out;
  {
    Statement runs(db_, (std::string(kInfoColumns) + " ORDER BY id").c_str());
    int rc = SQLITE_ERROR;
    if (runs.prepared()) {
      while ((rc = runs.Step()) == SQLITE_ROW) out.push_back(InfoFromRow(runs));
    }
    if (rc != SQLITE_DONE) {
      Error e = DbError("cannot list the runs");
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return e;
    }
    Statement names(db_, "SELECT run_id, name FROM benchmarks ORDER BY run_id, position");
    rc = SQLITE_ERROR;
    size_t k = 0;
    std::set<std::string> seen;
    if (names.prepared()) {
      while ((rc = names.Step()) == SQLITE_ROW) {
        int64_t run_id = names.Int(0);
        while (k < out.size() && out[k].id < run_id) {
          ++k;
          seen.clear();
        }
        if (k < out.size() && out[k].id == run_id) {
          std::string name = names.Text(1);
          if (seen.insert(name).second) out[k].benchmarks.push_back(std::move(name));
        }
      }
    }
    if (rc != SQLITE_DONE) {
      Error e = DbError("cannot list the benchmarks");
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return e;
    }
  }
  sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
  return out;
}

Expected<StoredRunInfo> ResultStore::Info(int64_t id) {
  Statement s(db_, (std::string(kInfoColumns) + " WHERE id = ?").c_str());
  if (!s.prepared()) return DbError("cannot prepare the lookup");
  if (Status st = StepToRun(s, id, db_, path_); !st.ok()) return st.error();
  StoredRunInfo info = InfoFromRow(s);
  int rc = SQLITE_OK;
  Statement names(db_, "SELECT name FROM benchmarks WHERE run_id = ? ORDER BY position");
  if (!names.prepared()) return DbError("cannot prepare the benchmark lookup");
  names.BindInt(1, id);
  std::set<std::string> seen;
  while ((rc = names.Step()) == SQLITE_ROW) {
    std::string name = names.Text(0);
    if (seen.insert(name).second) info.benchmarks.push_back(std::move(name));
  }
  if (rc != SQLITE_DONE) return DbError(fmt::format("cannot read the benchmarks of id {}", id));
  return info;
}

Expected<std::string> ResultStore::Document(int64_t id) {
  Statement s(db_, "SELECT document FROM runs WHERE id = ?");
  if (!s.prepared()) return DbError("cannot prepare the lookup");
  if (Status st = StepToRun(s, id, db_, path_); !st.ok()) return st.error();
  return s.Text(0);
}

Expected<RunResult> ResultStore::Get(int64_t id) {
  auto doc = Document(id);
  if (!doc.ok()) return doc.error();
  return ResultFromJson(*doc, fmt::format("store id {}", id));
}

Expected<int64_t> RecordInStore(const RunResult& result, const std::string& store_path) {
  auto store = ResultStore::Open(store_path, ResultStore::Mode::kCreate);
  if (!store.ok()) return store.error();
  return store->Insert(result);
}

// Declared in load.cc: resolves the store id half of LoadResultInput().
Expected<RunResult> LoadFromStore(const std::string& spec, uint64_t id,
                                  const std::string& store_path) {
  auto store = ResultStore::Open(store_path, ResultStore::Mode::kExisting);
  if (!store.ok()) {
    Error e = store.error();
    e.message = fmt::format("'{}' is not a file, and as a store id: {}", spec, e.message);
    return e;
  }
  return store->Get(static_cast<int64_t>(id));
}

}  // namespace kstacklab
