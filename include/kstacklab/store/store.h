// The results store: every run's result file in a database, listed and read back by id. Two
// kinds behind one interface: an embedded SQLite file (the default, one machine) and a
// PostgreSQL database (`postgresql://…`, a team's shared store). Same schema, same ids, same
// guarantees; layout, URL form, credentials and concurrency: docs/store.md. Library
// kstacklab_store (SQLite, libpq); turning a "FILE or store id" argument into a RunResult is
// kstacklab/loader/load.h.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/results/results.h"

namespace kstacklab::store {

namespace store_internal {
class Backend;
}

// The store every command uses when none is named: $KSTACKLAB_STORE when set and not empty (a
// path or a postgresql:// URL, so a team sets its shared store once), else
// $XDG_DATA_HOME/kstacklab/results.db, else ~/.local/share/kstacklab/results.db.
std::string DefaultStorePath();

// True when `spec` names a PostgreSQL store (it starts with postgresql:// or postgres://);
// anything else is a SQLite file path.
bool IsStoreUrl(const std::string& spec);

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

// A handle on one store. Thread-compatible (one handle per thread); any number of processes, on
// any number of hosts for PostgreSQL, may use the same store at once: every write is one
// transaction, readers see only whole runs. SQLite: WAL mode, writers take the write lock up
// front (BEGIN IMMEDIATE) and wait up to kBusyTimeoutMs for one another. PostgreSQL: a row lock
// or table lock is waited for up to kBusyTimeoutMs too (lock_timeout), a connection for
// connect_timeout (10 s unless the URL says otherwise); an insert that meets a lost connection,
// a serialization failure or a deadlock is tried again, 4 tries in all, never storing a document
// twice (docs/store.md).
class ResultStore {
 public:
  static constexpr int kBusyTimeoutMs = 10000;

  // kCreate makes the parent directories, the file and the tables as needed (what `run` and
  // `results import` use). kExisting opens a store that is already there READ-ONLY: it never
  // writes (no WAL switch, no tables; a 0-byte file reads as an empty store; a read-only file,
  // directory or another user's store can be read; a PostgreSQL session is made read-only and a
  // database without kstacklab's tables reads as an empty store). A missing file is a UsageError
  // saying there is no store yet (what list/show/export and store ids use). Insert on such a
  // handle fails.
  enum class Mode { kCreate, kExisting };

  // `path` is a file path or a postgresql:// URL (IsStoreUrl). Errors: a missing store
  // (kExisting), a path that is not a regular file, a file that is not a SQLite database,
  // someone else's database, a store written by a newer kstacklab (schema version above
  // kStoreSchemaVersion), a URL holding a password -> UsageError; an unwritable directory, a
  // failing read, a server that cannot be reached -> RuntimeError. Both name the store and the
  // remedy.
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

  // Stores each document exactly as given (`results copy`) unless the store already holds it
  // byte for byte: then its id is that of the first run holding it, `added` false. Each must be
  // a valid result document; `results` are those documents parsed (the index columns come from
  // them). One transaction; the check and the insert hold a lock that every InsertDocuments on
  // the store takes (any process, any host), so concurrent copies store a document once.
  struct DocumentId {
    int64_t id = 0;
    bool added = true;
  };
  Expected<std::vector<DocumentId>> InsertDocuments(const std::vector<std::string>& documents,
                                                    const std::vector<RunResult>& results);

  // The path or URL it was opened with.
  const std::string& path() const { return path_; }

 private:
  ResultStore(std::unique_ptr<store_internal::Backend> backend, std::string path);

  std::unique_ptr<store_internal::Backend> backend_;
  std::string path_;
};

// The one call `run` makes: opens (creating as needed) the store at `store_path` and inserts.
Expected<int64_t> RecordInStore(const RunResult& result, const std::string& store_path);

// Whether a store can be at (or created at) `path`, checked without creating anything: an
// existing path must be a regular file; otherwise its deepest existing ancestor must be a
// writable directory. A URL must parse, hold no password, and name a server that answers with a
// database that is empty or a kstacklab store of this schema or older (read-only check: nothing
// is created). For `run` to refuse before measuring, not warn after.
Status CheckStoreLocation(const std::string& path);

// `results copy`: every run of `from` not yet in `to`, in id order, `batch` runs per
// transaction (so a copy cut short keeps whole batches, and the next copy finishes it). A run
// is in `to` when `to` holds a document byte-identical to it (its identity: the same label,
// creation time, environment and figures), so copying twice, or back and forth, adds nothing;
// the check is repeated under InsertDocuments' lock, so copies running at once add nothing
// twice either.
// `progress` (may be empty) is called after each batch with (runs looked at, runs in all).
struct CopyOutcome {
  std::vector<std::pair<int64_t, int64_t>> copied;   // (id in `from`, new id in `to`)
  std::vector<std::pair<int64_t, int64_t>> present;  // (id in `from`, id already in `to`)
};
Expected<CopyOutcome> CopyRuns(ResultStore& from, ResultStore& to, size_t batch,
                               const std::function<void(size_t, size_t)>& progress);

// The summary fields a row is listed with, taken from the result itself (the environment
// capture); empty when the capture lacks them. Exposed for tests.
std::string StoredKernelRelease(const RunResult& result);
std::string StoredHost(const RunResult& result);

}  // namespace kstacklab::store
