// The results store: an embedded SQLite database of result files (issue 3, item 5). Layout,
// schema and concurrency guarantees: docs/store.md. Library kstacklab_store (SQLite); turning a
// "FILE or store id" argument into a RunResult is kstacklab/load.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kstacklab/error.h"
#include "kstacklab/results.h"

struct sqlite3;

namespace kstacklab {

// Default store path: $XDG_DATA_HOME/kstacklab/results.db, else
// ~/.local/share/kstacklab/results.db.
std::string DefaultStorePath();

// Version of the store's table layout, kept in SQLite's `PRAGMA user_version`. A store with a
// larger version (written by a newer kstacklab) is refused, never modified.
inline constexpr int kStoreSchemaVersion = 1;

// One row of `kstacklab results list`.
struct StoredRunInfo {
  int64_t id = 0;
  std::string created;    // the result's own `created` (ISO 8601 UTC); may be empty
  std::string stored_at;  // when it entered the store (ISO 8601 UTC)
  std::string label;
  std::string tool_version;
  std::string kernel_release;  // environment.kernel.release; "" when the capture has none
  std::string host;            // host name from the capture; "" when the capture has none
  bool partial = false;
  std::vector<std::string> benchmarks;  // distinct benchmark names, in file order
};

// A handle on one store file. Thread-compatible (one handle per thread); any number of processes
// may use the same file at once: the database is in WAL mode, writers take the write lock up
// front (BEGIN IMMEDIATE) and wait up to kBusyTimeoutMs for one another.
class ResultStore {
 public:
  static constexpr int kBusyTimeoutMs = 10000;

  // kCreate makes the parent directories, the file and the tables as needed (what `run` and
  // `results import` use). kExisting opens a store that is already there READ-ONLY: it never
  // writes (no WAL switch, no tables; a 0-byte file reads as an empty store; a read-only file,
  // directory or another user's store can be read). A missing file is a UsageError saying there
  // is no store yet (what list/show/export and store ids use). Insert on such a handle fails.
  enum class Mode { kCreate, kExisting };

  // Errors: a missing store (kExisting), a path that is not a regular file, a file that is not
  // a SQLite database, someone else's database, or a store written by a newer kstacklab (schema
  // version above kStoreSchemaVersion) -> UsageError; an unwritable directory or a failing read
  // -> RuntimeError. Both name the path and the remedy.
  static Expected<ResultStore> Open(const std::string& path, Mode mode);

  ResultStore(ResultStore&& other) noexcept;
  ResultStore& operator=(ResultStore&& other) noexcept;
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;
  ~ResultStore();

  // Stores `result` (serialised with ResultToJson) in one transaction; returns its new id.
  // Ids are positive, increasing, and never reused.
  Expected<int64_t> Insert(const RunResult& result);
  // Stores every result in ONE transaction: all or nothing. Returns the ids in order.
  Expected<std::vector<int64_t>> InsertAll(const std::vector<RunResult>& results);

  // Every stored run, by increasing id.
  Expected<std::vector<StoredRunInfo>> List();
  Expected<StoredRunInfo> Info(int64_t id);

  // The stored document, exactly as ResultToJson wrote it. Missing id -> UsageError
  // "no result with id N in PATH (see `kstacklab results list`)".
  Expected<std::string> Document(int64_t id);
  // Document(id) parsed back (source named "store id N").
  Expected<RunResult> Get(int64_t id);

  const std::string& path() const { return path_; }

 private:
  ResultStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Error DbError(const std::string& what) const;
  Error NoSuchId(int64_t id) const;

  sqlite3* db_ = nullptr;
  std::string path_;
  bool empty_ = false;  // read-only open of a file without tables: lists nothing
};

// The one call `run` makes: opens (creating as needed) the store at `store_path` and inserts.
Expected<int64_t> RecordInStore(const RunResult& result, const std::string& store_path);

// Whether a store can be at (or created at) `path`, checked without creating anything: an
// existing path must be a regular file; otherwise its deepest existing ancestor must be a
// writable directory. For `run` to refuse before measuring, not warn after.
Status CheckStoreLocation(const std::string& path);

// The summary fields a row is listed with, taken from the result itself (the environment
// capture); empty when the capture lacks them. Exposed for tests.
std::string StoredKernelRelease(const RunResult& result);
std::string StoredHost(const RunResult& result);

}  // namespace kstacklab
