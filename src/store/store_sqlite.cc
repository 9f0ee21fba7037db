// The SQLite results store (docs/store.md): the embedded default.
//
// Schema version 1 (PRAGMA user_version = 1):
//   runs(id, stored_at, created, label, tool_version, kernel_release, host, partial, document)
//     one row per stored result; `document` is the full result JSON as ResultToJson wrote it, so
//     a stored result never loses a field and export is byte-identical to what was stored.
//   benchmarks(run_id, position, name, variant, params, repetitions)
//     one row per benchmark entry, for listing and queries without parsing documents.
//   runs_by_created_label: the index `results copy` finds a stored document by (kCopyIndex).
// Concurrency: WAL journal, a busy timeout, and BEGIN IMMEDIATE around every write, so two
// `kstacklab run` processes finishing at the same moment both get their rows in, and the
// duplicate check of `results copy` runs under the write lock with its insert.
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>
#include <thread>
#include <utility>

#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "store_backend.h"

namespace kstacklab::store::store_internal::sqlite {
namespace {

constexpr const char* kRemedy = "choose a writable store location, or skip the store";

constexpr const char* kDamaged =
    "the store file is damaged: keep a copy, then move it away (a new store is started there) "
    "and add your result files back with `kstacklab results import`; `sqlite3 FILE .recover` "
    "(Debian package sqlite3) may save the runs only the store held";

int Primary(int rc) { return rc & 0xff; }

// Why the last call on `db` failed, in words a user can act on: SQLite's message, the system's
// reason when a system call failed (a full disk shows as "disk I/O error" otherwise), and the
// fix for the failures a user can mend.
std::string Reason(sqlite3* db) {
  std::string why = sqlite3_errmsg(db);
  const int primary = Primary(sqlite3_extended_errcode(db));
  const int sys = (primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN || primary == SQLITE_FULL)
                      ? sqlite3_system_errno(db)
                      : 0;
  if (sys != 0) why += fmt::format(" ({})", std::strerror(sys));
  if (primary == SQLITE_FULL || sys == ENOSPC || sys == EDQUOT) {
    why += "; free space on the store's filesystem, or choose another store";
  } else if (primary == SQLITE_CORRUPT) {
    why += std::string("; ") + kDamaged;
  } else if (primary == SQLITE_READONLY || sys == EACCES || sys == EROFS) {
    why += std::string("; ") + kRemedy;
  } else if (primary == SQLITE_ERROR && (why.find("no such column") != std::string::npos ||
                                         why.find("has no column named") != std::string::npos ||
                                         why.find("no such table") != std::string::npos)) {
    // Tables without the columns of schema version 1: edited by hand, or another tool's.
    why +=
        "; the store's tables are not those of kstacklab's store schema: keep a copy, then move "
        "it away or choose another store";
  }
  return why;
}

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
CREATE INDEX runs_by_created_label ON runs(created, label);
PRAGMA user_version = 1;
)sql";

// The index the duplicate check of `results copy` looks runs up by. Stores created before it was
// part of the schema get it on their next write open; it changes nothing an older kstacklab
// reads or writes, so the schema version stays 1.
constexpr const char* kCopyIndex =
    "CREATE INDEX IF NOT EXISTS runs_by_created_label ON runs(created, label)";

}  // namespace

namespace {
// A by-id lookup found no row: the user's error, unless the store is damaged (SQLite can miss a
// row in a damaged table without noticing), which PRAGMA quick_check then tells.
Error MissingId(sqlite3* db, int64_t id, const std::string& path) {
  Statement check(db, "PRAGMA quick_check(1)");
  if (check.prepared() && check.Step() == SQLITE_ROW && check.Text(0) != "ok") {
    return RuntimeError(fmt::format("results store {}: no result with id {}, and {} ({})", path, id,
                                    kDamaged, EscapeControl(check.Text(0))));
  }
  return NoSuchRun(id, path);
}

// Binds `id` to a by-id lookup and steps onto its row.
Status StepToRun(Statement& s, int64_t id, sqlite3* db, const std::string& path) {
  s.BindInt(1, id);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return MissingId(db, id, path);
  if (rc != SQLITE_ROW) {
    return RuntimeError(
        fmt::format("results store {}: cannot read id {}: {}", path, id, Reason(db)));
  }
  return OkStatus();
}
}  // namespace

namespace {

// One SQLite transaction: BEGIN on Begin(), ROLLBACK on scope exit unless Commit() succeeded.
class Transaction {
 public:
  // kind: "BEGIN" (deferred: a read snapshot) or "BEGIN IMMEDIATE" (takes the write lock).
  static Expected<Transaction> Begin(sqlite3* db, const char* kind) {
    if (sqlite3_exec(db, kind, nullptr, nullptr, nullptr) != SQLITE_OK) {
      return RuntimeError(Reason(db));
    }
    return Transaction(db);
  }
  Transaction(Transaction&& o) noexcept : db_(std::exchange(o.db_, nullptr)) {}
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction() {
    if (db_ != nullptr) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  // True when committed; on failure the destructor rolls back.
  bool Commit() {
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) return false;
    db_ = nullptr;
    return true;
  }

 private:
  explicit Transaction(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

// PRAGMA user_version, or the error of a file that is not a database.
Expected<int> ReadVersion(sqlite3* db, const std::string& path) {
  Statement v(db, "PRAGMA user_version");
  if (!v.prepared() || v.Step() != SQLITE_ROW) {
    if (Primary(sqlite3_errcode(db)) == SQLITE_NOTADB) {
      return UsageError(fmt::format(
          "{} is not a kstacklab results store (not a SQLite database); move it away or choose "
          "another store path",
          path));
    }
    if (Primary(sqlite3_errcode(db)) == SQLITE_READONLY) {
      // Opened for writing, but SQLite cannot write: the file, or its directory (a store in WAL
      // mode needs its -wal and -shm files beside it), is read-only for this user. Not a read
      // problem, though SQLite meets it on the first read.
      return RuntimeError(fmt::format(
          "results store {} cannot be written: the file or its directory is read-only for this "
          "user (a store needs its -wal and -shm files beside it): {}",
          path, Reason(db)));
    }
    return RuntimeError(
        fmt::format("results store {}: cannot read the schema version: {}", path, Reason(db)));
  }
  const int64_t version = v.Int(0);
  if (version < 0) {  // no kstacklab writes one: someone else's database, or a damaged one
    return UsageError(fmt::format(
        "{} has schema version {} (PRAGMA user_version), which no kstacklab writes: not a "
        "kstacklab results store; move it away or choose another store path",
        path, version));
  }
  return static_cast<int>(version);
}

// Number of tables, views and indexes: 0 in a new (or 0-byte) file.
Expected<int64_t> SchemaObjects(sqlite3* db, const std::string& path) {
  Statement count(db, "SELECT count(*) FROM sqlite_master");
  if (!count.prepared() || count.Step() != SQLITE_ROW) {
    return RuntimeError(
        fmt::format("results store {}: cannot read the table list: {}", path, Reason(db)));
  }
  return count.Int(0);
}

// The wrong kind of file at the store path is the path's fault, so these are usage errors.
Error Foreign(const std::string& path) {
  return UsageError(fmt::format(
      "{} is a SQLite database but not a kstacklab results store; choose another store path",
      path));
}

// Switches to WAL (readers proceed while a writer commits). Switching needs a brief exclusive
// lock; another process creating the same store at the same moment can hold it, so retry.
Status EnableWal(sqlite3* db, const std::string& path) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(ResultStore::kBusyTimeoutMs);
  for (;;) {
    Statement wal(db, "PRAGMA journal_mode=WAL");
    int rc = wal.prepared() ? wal.Step() : sqlite3_errcode(db);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) return OkStatus();
    if (Primary(rc) != SQLITE_BUSY && Primary(rc) != SQLITE_LOCKED) {
      return RuntimeError(
          fmt::format("results store {}: cannot switch to WAL mode: {}", path, Reason(db)));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return RuntimeError(fmt::format(
          "results store {}: timed out waiting for another process (switching to WAL mode)", path));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Creates the tables of a version-0 store under the write lock, re-checking the version:
// another process may have created them first.
Status CreateTables(sqlite3* db, const std::string& path) {
  auto tx = Transaction::Begin(db, "BEGIN IMMEDIATE");
  if (!tx.ok()) {
    return RuntimeError(
        fmt::format("results store {}: cannot lock the store to create its "
                    "tables: {}; {}",
                    path, tx.error().message, kRemedy));
  }
  auto version = ReadVersion(db, path);
  if (!version.ok()) return version.error();
  if (*version > kStoreSchemaVersion) return TooNewSchema(path, *version);
  if (*version == 0) {
    auto objects = SchemaObjects(db, path);
    if (!objects.ok()) return objects.error();
    if (*objects != 0) return Foreign(path);
    if (sqlite3_exec(db, kCreateSchema, nullptr, nullptr, nullptr) != SQLITE_OK) {
      return RuntimeError(
          fmt::format("results store {}: cannot create the tables: {}", path, Reason(db)));
    }
  }
  if (!tx->Commit()) {
    return RuntimeError(
        fmt::format("results store {}: cannot commit the new tables: {}", path, Reason(db)));
  }
  return OkStatus();
}

// Adds kCopyIndex to a store made without it, under the write lock (taken only when it is
// missing: a write open of a current store reads, nothing more).
Status AddCopyIndex(sqlite3* db, const std::string& path) {
  {
    Statement has(db,
                  "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                  "name = 'runs_by_created_label'");
    if (!has.prepared() || has.Step() != SQLITE_ROW) {
      return RuntimeError(
          fmt::format("results store {}: cannot read the index list: {}", path, Reason(db)));
    }
    if (has.Int(0) != 0) return OkStatus();
  }  // finalized before the write transaction begins
  auto tx = Transaction::Begin(db, "BEGIN IMMEDIATE");
  if (!tx.ok()) {
    return RuntimeError(fmt::format("results store {}: cannot lock the store to add an index: {}",
                                    path, tx.error().message));
  }
  if (sqlite3_exec(db, kCopyIndex, nullptr, nullptr, nullptr) != SQLITE_OK || !tx->Commit()) {
    return RuntimeError(fmt::format("results store {}: cannot add an index: {}", path, Reason(db)));
  }
  return OkStatus();
}

// Opens the SQLite handle. Read-only opens never write (no WAL switch, no tables, no -shm
// created in a read-only directory: if the normal read-only open cannot read, e.g. a WAL store
// in a directory we cannot write, the file is opened as immutable).
Expected<sqlite3*> OpenHandle(const std::string& path, ResultStore::Mode mode) {
  const bool read_only = mode != ResultStore::Mode::kCreate;
  auto try_open = [&](const std::string& name, int flags) -> Expected<sqlite3*> {
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(name.c_str(), &db, flags, nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = db ? Reason(db) : sqlite3_errstr(rc);
      sqlite3_close_v2(db);
      if (!read_only && msg.find(kRemedy) == std::string::npos) msg += std::string("; ") + kRemedy;
      return RuntimeError(fmt::format("cannot open the results store {}: {}", path, msg));
    }
    sqlite3_busy_timeout(db, ResultStore::kBusyTimeoutMs);
    sqlite3_extended_result_codes(db, 1);
    return db;
  };
  if (!read_only) return try_open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  auto db = try_open(path, SQLITE_OPEN_READONLY);
  if (!db.ok()) return db;
  Statement probe(*db, "SELECT count(*) FROM sqlite_master");
  int rc = probe.prepared() ? probe.Step() : sqlite3_errcode(*db);
  const int primary = Primary(rc);
  if (rc == SQLITE_ROW || (primary != SQLITE_READONLY && primary != SQLITE_CANTOPEN)) {
    return db;  // readable, or an error ReadVersion reports in its own words
  }
  sqlite3_close_v2(*db);
  std::string uri = "file:";
  for (char c : path) {  // percent-encode what a URI path cannot hold
    if (c == '%' || c == '?' || c == '#') {
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      uri += c;
    }
  }
  return try_open(uri + "?immutable=1", SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
}

}  // namespace

namespace {

// The SQLite store on one open handle.
class SqliteBackend final : public Backend {
 public:
  // `empty`: a read-only open of a file without tables, which lists nothing.
  SqliteBackend(sqlite3* db, std::string path, bool empty)
      : db_(db), path_(std::move(path)), empty_(empty) {}
  ~SqliteBackend() override { sqlite3_close_v2(db_); }
  SqliteBackend(const SqliteBackend&) = delete;
  SqliteBackend& operator=(const SqliteBackend&) = delete;

  Expected<std::vector<StoredRow>> InsertAll(const std::vector<RunRow>& rows,
                                             Duplicates duplicates) override;
  Expected<std::vector<StoredRunInfo>> List() override;
  Expected<StoredRunInfo> Info(int64_t id) override;
  Expected<std::string> Document(int64_t id) override;

 private:
  Error DbError(const std::string& what) const {
    return RuntimeError(fmt::format("results store {}: {}: {}", path_, what, Reason(db_)));
  }
  Error NoSuchId(int64_t id) const { return MissingId(db_, id, path_); }

  sqlite3* db_;
  std::string path_;
  bool empty_;
};

// Closes a handle on scope exit unless released (the backend takes it over).
struct HandleCloser {
  sqlite3* db;
  ~HandleCloser() { sqlite3_close_v2(db); }
};

}  // namespace

Expected<std::unique_ptr<Backend>> Open(const std::string& path, ResultStore::Mode mode) {
  using Mode = ResultStore::Mode;
  if (path.empty()) return UsageError("the results store path is empty; give a file path");
  KSTACKLAB_RETURN_IF_ERROR(CheckSymlinkOwner(path));
  struct stat st {};
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    return UsageError(fmt::format(
        "results store {} is a directory; give a file path such as {}/results.db", path, path));
  }
  if (exists && !S_ISREG(st.st_mode)) {  // a FIFO would block the open forever
    return UsageError(fmt::format("the results store {} is not a regular file; {}", path, kRemedy));
  }
  if (!exists && mode != Mode::kCreate) {
    return UsageError(fmt::format(
        "there is no results store at {} yet (`kstacklab run` or `kstacklab results import FILE` "
        "creates it)",
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
  auto db = OpenHandle(path, mode);
  if (!db.ok()) return db.error();
  HandleCloser closer{*db};
  auto db_error = [&](const std::string& what) {
    return RuntimeError(fmt::format("results store {}: {}: {}", path, what, Reason(*db)));
  };
  auto version = ReadVersion(*db, path);
  if (!version.ok()) return version.error();
  if (*version > kStoreSchemaVersion) return TooNewSchema(path, *version);
  if (mode != Mode::kCreate) {
    bool empty = false;
    if (*version == 0) {
      // A 0-byte or new file holds nothing yet; anything else is someone else's database.
      auto objects = SchemaObjects(*db, path);
      if (!objects.ok()) return objects.error();
      if (*objects != 0) return Foreign(path);
      empty = true;
    }
    closer.db = nullptr;
    return std::unique_ptr<Backend>(std::make_unique<SqliteBackend>(*db, path, empty));
  }
  // Someone else's database is refused before anything is changed in it (journal mode included).
  // The version and the objects are read in one snapshot: another process may be creating the
  // tables right now, and a store it has just created is not foreign.
  if (*version == 0) {
    auto snapshot = Transaction::Begin(*db, "BEGIN");
    if (!snapshot.ok()) return db_error("cannot read the store");
    auto now = ReadVersion(*db, path);
    if (!now.ok()) return now.error();
    auto objects = SchemaObjects(*db, path);
    if (!objects.ok()) return objects.error();
    if (*now == 0 && *objects != 0) return Foreign(path);
  }
  KSTACKLAB_RETURN_IF_ERROR(EnableWal(*db, path));
  if (sqlite3_exec(*db, "PRAGMA foreign_keys=ON", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return db_error("cannot enable foreign keys");
  }
  if (*version < kStoreSchemaVersion) KSTACKLAB_RETURN_IF_ERROR(CreateTables(*db, path));
  KSTACKLAB_RETURN_IF_ERROR(AddCopyIndex(*db, path));
  closer.db = nullptr;
  return std::unique_ptr<Backend>(std::make_unique<SqliteBackend>(*db, path, false));
}

namespace {

// One run's rows, through the two prepared inserts; its new id (0 when a step failed: the
// caller reads the reason off the handle).
int64_t InsertRun(sqlite3* db, Statement& run, Statement& bench, const RunRow& row) {
  sqlite3_reset(run.get());
  run.BindText(1, UtcTimestamp());
  run.BindText(2, row.created);
  run.BindText(3, row.label);
  run.BindText(4, row.tool_version);
  run.BindTextOrNull(5, row.kernel_release);
  run.BindTextOrNull(6, row.host);
  run.BindInt(7, row.partial ? 1 : 0);
  run.BindText(8, row.document);
  if (run.Step() != SQLITE_DONE) return 0;
  const int64_t id = sqlite3_last_insert_rowid(db);
  for (size_t i = 0; i < row.benchmarks.size(); ++i) {
    const BenchmarkRow& b = row.benchmarks[i];
    sqlite3_reset(bench.get());
    bench.BindInt(1, id);
    bench.BindInt(2, static_cast<int64_t>(i));
    bench.BindText(3, b.name);
    bench.BindText(4, b.variant);
    bench.BindText(5, b.params);
    bench.BindInt(6, b.repetitions);
    if (bench.Step() != SQLITE_DONE) return 0;
  }
  return id;
}

// The id of the first run whose document is `row`'s byte for byte, 0 when there is none, -1 when
// the lookup failed.
int64_t FindDocument(Statement& find, const RunRow& row) {
  sqlite3_reset(find.get());
  find.BindText(1, row.created);
  find.BindText(2, row.label);
  find.BindText(3, row.document);
  const int rc = find.Step();
  if (rc == SQLITE_ROW) return find.Int(0);
  return rc == SQLITE_DONE ? 0 : -1;
}

}  // namespace

Expected<std::vector<StoredRow>> SqliteBackend::InsertAll(const std::vector<RunRow>& rows,
                                                          Duplicates duplicates) {
  // The write lock, taken before anything is read, is also what makes kSkip's check and insert
  // one step: no other connection writes between them.
  auto tx = Transaction::Begin(db_, "BEGIN IMMEDIATE");
  if (!tx.ok()) {
    return DbError("cannot take the write lock (another kstacklab held it for over 10 s?)");
  }
  std::vector<StoredRow> ids;
  // Each statement's failure is reported before the next is prepared (which would reset the
  // error to "not an error").
  Statement run(db_,
                "INSERT INTO runs(stored_at, created, label, tool_version, kernel_release, host, "
                "partial, document) VALUES(?,?,?,?,?,?,?,?)");
  if (!run.prepared()) return DbError("cannot prepare the insert");
  Statement bench(db_,
                  "INSERT INTO benchmarks(run_id, position, name, variant, params, repetitions) "
                  "VALUES(?,?,?,?,?,?)");
  if (!bench.prepared()) return DbError("cannot prepare the insert");
  Statement find(db_,
                 "SELECT id FROM runs WHERE created = ? AND label = ? AND document = ? "
                 "ORDER BY id LIMIT 1");
  if (!find.prepared()) return DbError("cannot prepare the lookup");
  // SQLite reports a table at the largest row id as "database or disk is full": say what it is.
  {
    Statement top(db_, "SELECT max(id) FROM runs");
    if (top.prepared() && top.Step() == SQLITE_ROW && top.Int(0) == INT64_MAX) {
      return RuntimeError(fmt::format(
          "results store {}: its run ids have reached the largest SQLite allows ({}), so no run "
          "can be added; start another store and keep this one for reading",
          path_, INT64_MAX));
    }
  }
  for (const RunRow& row : rows) {
    if (duplicates == Duplicates::kSkip) {
      const int64_t present = FindDocument(find, row);
      if (present < 0) return DbError("cannot look for the result");
      if (present > 0) {
        ids.push_back(StoredRow{present, false});
        continue;
      }
    }
    const int64_t id = InsertRun(db_, run, bench, row);
    if (id == 0) return DbError("cannot insert the result");
    ids.push_back(StoredRow{id, true});
  }
  if (!tx->Commit()) return DbError("cannot commit the insert");
  return ids;
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

Expected<std::vector<StoredRunInfo>> SqliteBackend::List() {
  std::vector<StoredRunInfo> out;
  if (empty_) return out;
  // One read transaction: a consistent snapshot even while another process inserts.
  auto tx = Transaction::Begin(db_, "BEGIN");
  if (!tx.ok()) return DbError("cannot start reading");
  Statement runs(db_, (std::string(kInfoColumns) + " ORDER BY id").c_str());
  int rc = SQLITE_ERROR;
  if (runs.prepared()) {
    while ((rc = runs.Step()) == SQLITE_ROW) out.push_back(InfoFromRow(runs));
  }
  if (rc != SQLITE_DONE) return DbError("cannot list the runs");
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
  if (rc != SQLITE_DONE) return DbError("cannot list the benchmarks");
  return out;  // a read transaction has nothing to commit: the destructor ends it
}

Expected<StoredRunInfo> SqliteBackend::Info(int64_t id) {
  if (empty_) return NoSuchId(id);
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

Expected<std::string> SqliteBackend::Document(int64_t id) {
  if (empty_) return NoSuchId(id);
  Statement s(db_, "SELECT document FROM runs WHERE id = ?");
  if (!s.prepared()) return DbError("cannot prepare the lookup");
  if (Status st = StepToRun(s, id, db_, path_); !st.ok()) return st.error();
  return s.Text(0);
}

Status CheckLocation(const std::string& path) {
  if (!path.empty() && path.back() == '/') {
    return UsageError(
        fmt::format("the results store {} names a directory; give a file path such as {}results.db",
                    path, path));
  }
  KSTACKLAB_RETURN_IF_ERROR(CheckSymlinkOwner(path));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      return UsageError(
          fmt::format("the results store {} is not a regular file; {}", path, kRemedy));
    }
    // Not SQLite, someone else's database, or a newer schema (usage errors) are refused now,
    // not after measuring. A store that cannot be read right now (a full or failing disk) is
    // left to the insert after the run, which keeps the measurement in the file and warns.
    if (st.st_size == 0) return OkStatus();
    auto store = ResultStore::Open(path, ResultStore::Mode::kExisting);
    if (!store.ok() && store.error().exit_code == kExitUsage) return store.error();
    return OkStatus();
  }
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  while (!dir.empty() && ::stat(dir.c_str(), &st) != 0) dir = dir.parent_path();
  if (dir.empty()) return OkStatus();  // relative to the current directory, which exists
  if (!S_ISDIR(st.st_mode)) {
    return UsageError(
        fmt::format("the results store {} cannot be created: {} is not a "
                    "directory; {}",
                    path, dir.string(), kRemedy));
  }
  // A file is created and removed there (access() says yes to root anywhere, /proc included).
  std::string probe = (dir / ".kstacklab-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    return UsageError(fmt::format("the results store {} cannot be created in {}: {}; {}", path,
                                  dir.string(), std::strerror(errno), kRemedy));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return OkStatus();
}

}  // namespace kstacklab::store::store_internal::sqlite
