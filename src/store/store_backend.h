// The two kinds of results store behind kstacklab::store::ResultStore: an embedded SQLite file
// and a PostgreSQL database (docs/store.md). Private to src/results/: the public face is store.h.
//
// A backend stores rows the front end has already made (documents serialised, sizes checked);
// it owns transactions, locking and its database's error words. Every message names the store
// (its path or its URL, which never holds a password) and, where a user can act, the remedy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/store/store.h"

namespace kstacklab::store::store_internal {

// One benchmark entry's index row.
struct BenchmarkRow {
  std::string name;
  std::string variant;
  std::string params;  // compact JSON
  int64_t repetitions = 0;
};

// One run as it is stored: the index columns and the whole document.
struct RunRow {
  std::string created;
  std::string label;
  std::string tool_version;
  std::string kernel_release;  // "" is stored as NULL
  std::string host;            // "" is stored as NULL
  bool partial = false;
  std::string document;  // the result JSON, stored and given back byte for byte
  std::vector<BenchmarkRow> benchmarks;
};

// What an insert did with one row: its id, and whether it was added or was there already.
struct StoredRow {
  int64_t id = 0;
  bool added = true;
};

// Whether an insert stores every row, or only those whose document the store does not hold.
enum class Duplicates { kStore, kSkip };

class Backend {
 public:
  virtual ~Backend() = default;
  // Stores every row in ONE transaction, all or nothing; their ids in order. A failure leaves
  // the store exactly as it was (or, when a connection is lost at commit, says that it cannot
  // tell). kSkip: a row whose document the store already holds byte for byte (or an earlier row
  // of `rows` holds) is not stored again; its id is the first such run's, `added` false. The
  // check and the insert are one transaction under a lock every kSkip insert takes (SQLite: the
  // write lock; PostgreSQL: an advisory lock), so concurrent kSkip inserts of one document add
  // it once.
  virtual Expected<std::vector<StoredRow>> InsertAll(const std::vector<RunRow>& rows,
                                                     Duplicates duplicates) = 0;
  // Every run by increasing id, from one consistent snapshot: only whole runs.
  virtual Expected<std::vector<StoredRunInfo>> List() = 0;
  virtual Expected<StoredRunInfo> Info(int64_t id) = 0;
  virtual Expected<std::string> Document(int64_t id) = 0;
};

namespace sqlite {
// Opens the SQLite store at `path` (a file path). Errors as ResultStore::Open says.
Expected<std::unique_ptr<Backend>> Open(const std::string& path, ResultStore::Mode mode);

// The SQLite part of CheckStoreLocation: a regular file that is a store (or can become one), or
// a directory where one can be created.
Status CheckLocation(const std::string& path);
}  // namespace sqlite

namespace pg {
// Opens the PostgreSQL store at `url` (postgresql:// or postgres://, libpq's URI form). kCreate
// creates the tables when the database has none; kExisting opens a read-only session and never
// writes. Errors: a URL libpq cannot parse, or one holding a password, a database that is not a
// kstacklab store or is of a newer schema, a server encoding that is not UTF8 -> UsageError; a
// server that cannot be reached or refuses us -> RuntimeError.
Expected<std::unique_ptr<Backend>> Open(const std::string& url, ResultStore::Mode mode);
}  // namespace pg

// The message of a by-id lookup that found nothing (the same words from every backend).
Error NoSuchRun(int64_t id, const std::string& where);

// "the store … has schema version V, newer than this kstacklab understands".
Error TooNewSchema(const std::string& where, int64_t version);

}  // namespace kstacklab::store::store_internal
