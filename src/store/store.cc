// The results store's front end (docs/store.md): which backend a store name means, the rows a
// result is stored as, and what every backend shares (the size rule, RecordInStore, copying).
#include "kstacklab/store/store.h"

#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <utility>

#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/results/result_reader.h"
#include "store_backend.h"

namespace kstacklab::store {

namespace store_internal {

Error NoSuchRun(int64_t id, const std::string& where) {
  return UsageError(
      fmt::format("no result with id {} in {} (see `kstacklab results list`)", id, where));
}

Error TooNewSchema(const std::string& where, int64_t version) {
  return UsageError(fmt::format(
      "results store {} has schema version {}, newer than this kstacklab understands ({}); use a "
      "newer kstacklab, or another store",
      where, version, kStoreSchemaVersion));
}

}  // namespace store_internal

namespace {

using store_internal::BenchmarkRow;
using store_internal::RunRow;

// The row `document` (the serialised `result`) is stored as. Every reader loads a stored
// document with the result file limit: one larger than that could be stored but never read
// back (show, compare, plot, export would refuse it), so it is refused before anything is
// written. `index` (from 1) names the result in the message.
Expected<RunRow> MakeRow(const RunResult& result, std::string document, size_t index) {
  if (document.size() > ResultLimits::kMaxFileBytes) {
    return UsageError(fmt::format(
        "result {} ({}) is {} bytes as stored, more than the {} bytes a stored result may be "
        "to be read back; split the run (fewer repetitions or rows per file)",
        index, EscapeControl(result.label), document.size(), ResultLimits::kMaxFileBytes));
  }
  RunRow row;
  row.created = result.created;
  row.label = result.label;
  row.tool_version = result.tool_version;
  row.kernel_release = StoredKernelRelease(result);
  row.host = StoredHost(result);
  row.partial = result.partial;
  row.document = std::move(document);
  for (const BenchmarkResult& b : result.benchmarks) {
    row.benchmarks.push_back(
        BenchmarkRow{b.name, StoredVariant(b.variant, b.knob),
                     b.params.dump(-1, ' ', false, Json::error_handler_t::replace),
                     static_cast<int64_t>(b.repetitions.size())});
  }
  return row;
}

}  // namespace

std::string DefaultStorePath() {
  const char* team = std::getenv("KSTACKLAB_STORE");
  if (team && *team) return team;
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/kstacklab/results.db";
  return HomeDir() + "/.local/share/kstacklab/results.db";
}

bool IsStoreUrl(const std::string& spec) {
  return spec.rfind("postgresql://", 0) == 0 || spec.rfind("postgres://", 0) == 0;
}

std::string StoredKernelRelease(const RunResult& result) {
  return EnvironmentFactsOf(result.environment).kernel_release.value_or("");
}

std::string StoredHost(const RunResult& result) {
  return EnvironmentFactsOf(result.environment).hostname.value_or("");
}

ResultStore::ResultStore(std::unique_ptr<store_internal::Backend> backend, std::string path)
    : backend_(std::move(backend)), path_(std::move(path)) {}
ResultStore::ResultStore(ResultStore&& other) noexcept = default;
ResultStore& ResultStore::operator=(ResultStore&& other) noexcept = default;
ResultStore::~ResultStore() = default;

Expected<ResultStore> ResultStore::Open(const std::string& path, Mode mode) {
  if (path.empty()) return UsageError("the results store path is empty; give a file path");
  auto backend = IsStoreUrl(path) ? store_internal::pg::Open(path, mode)
                                  : store_internal::sqlite::Open(path, mode);
  if (!backend.ok()) return backend.error();
  return ResultStore(std::move(*backend), path);
}

Expected<int64_t> ResultStore::Insert(const RunResult& result) {
  auto ids = InsertAll({result});
  if (!ids.ok()) return ids.error();
  return ids->front();
}

namespace {

// The rows of `documents` (serialised `results`), or the first that may not be stored.
Expected<std::vector<RunRow>> MakeRows(const std::vector<std::string>& documents,
                                       const std::vector<RunResult>& results) {
  KSTACKLAB_CHECK(documents.size() == results.size());
  std::vector<RunRow> rows;
  rows.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    auto row = MakeRow(results[i], documents[i], i + 1);
    if (!row.ok()) return row.error();
    rows.push_back(std::move(*row));
  }
  return rows;
}

}  // namespace

Expected<std::vector<int64_t>> ResultStore::InsertAll(const std::vector<RunResult>& results) {
  std::vector<std::string> documents;
  documents.reserve(results.size());
  for (const RunResult& r : results) documents.push_back(ResultToJson(r));
  auto rows = MakeRows(documents, results);
  if (!rows.ok()) return rows.error();
  auto stored = backend_->InsertAll(*rows, store_internal::Duplicates::kStore);
  if (!stored.ok()) return stored.error();
  std::vector<int64_t> ids;
  ids.reserve(stored->size());
  for (const store_internal::StoredRow& s : *stored) ids.push_back(s.id);
  return ids;
}

Expected<std::vector<ResultStore::DocumentId>> ResultStore::InsertDocuments(
    const std::vector<std::string>& documents, const std::vector<RunResult>& results) {
  auto rows = MakeRows(documents, results);
  if (!rows.ok()) return rows.error();
  auto stored = backend_->InsertAll(*rows, store_internal::Duplicates::kSkip);
  if (!stored.ok()) return stored.error();
  std::vector<DocumentId> ids;
  ids.reserve(stored->size());
  for (const store_internal::StoredRow& s : *stored) ids.push_back(DocumentId{s.id, s.added});
  return ids;
}

Expected<std::vector<StoredRunInfo>> ResultStore::List() { return backend_->List(); }
Expected<StoredRunInfo> ResultStore::Info(int64_t id) { return backend_->Info(id); }
Expected<std::string> ResultStore::Document(int64_t id) { return backend_->Document(id); }

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

Status CheckStoreLocation(const std::string& path) {
  if (!IsStoreUrl(path)) return store_internal::sqlite::CheckLocation(path);
  // Read-only: a database without kstacklab's tables is fine (the first run creates them); a
  // foreign or newer store, a password in the URL, or a server that does not answer is refused
  // before anything is measured.
  auto store = ResultStore::Open(path, ResultStore::Mode::kExisting);
  if (!store.ok()) return store.error();
  return OkStatus();
}

namespace {

// The runs of `to` by (created, label): the candidates a document of `from` may equal.
Expected<std::multimap<std::pair<std::string, std::string>, int64_t>> IndexRuns(ResultStore& to) {
  auto runs = to.List();
  if (!runs.ok()) return runs.error();
  std::multimap<std::pair<std::string, std::string>, int64_t> index;
  for (const StoredRunInfo& r : *runs) index.emplace(std::make_pair(r.created, r.label), r.id);
  return index;
}

}  // namespace

Expected<CopyOutcome> CopyRuns(ResultStore& from, ResultStore& to, size_t batch,
                               const std::function<void(size_t, size_t)>& progress) {
  KSTACKLAB_CHECK(batch > 0);
  auto runs = from.List();
  if (!runs.ok()) return runs.error();
  auto index = IndexRuns(to);
  if (!index.ok()) return index.error();
  CopyOutcome out;
  std::vector<std::string> documents;
  std::vector<RunResult> results;
  std::vector<int64_t> source_ids;
  auto flush = [&]() -> Status {
    if (documents.empty()) return OkStatus();
    auto ids = to.InsertDocuments(documents, results);
    if (!ids.ok()) return ids.error();
    for (size_t i = 0; i < ids->size(); ++i) {
      // Not added: another copy stored it since `index` was read.
      auto& list = (*ids)[i].added ? out.copied : out.present;
      list.emplace_back(source_ids[i], (*ids)[i].id);
      index->emplace(std::make_pair(results[i].created, results[i].label), (*ids)[i].id);
    }
    documents.clear();
    results.clear();
    source_ids.clear();
    return OkStatus();
  };
  for (size_t k = 0; k < runs->size(); ++k) {
    const StoredRunInfo& info = (*runs)[k];
    auto doc = from.Document(info.id);
    if (!doc.ok()) return doc.error();
    std::optional<int64_t> present;
    auto [lo, hi] = index->equal_range(std::make_pair(info.created, info.label));
    for (auto it = lo; it != hi && !present; ++it) {
      auto other = to.Document(it->second);
      if (!other.ok()) return other.error();
      if (*other == *doc) present = it->second;
    }
    // A document twice in `from` is copied once: the second finds the first in this batch.
    for (size_t i = 0; i < documents.size() && !present; ++i) {
      if (documents[i] == *doc) present = 0;
    }
    if (present) {
      if (*present != 0) out.present.emplace_back(info.id, *present);
    } else {
      auto parsed = ResultFromJson(*doc, fmt::format("store id {} of {}", info.id, from.path()));
      if (!parsed.ok()) return parsed.error();
      documents.push_back(std::move(*doc));
      results.push_back(std::move(*parsed));
      source_ids.push_back(info.id);
    }
    if (documents.size() >= batch || k + 1 == runs->size()) {
      KSTACKLAB_RETURN_IF_ERROR(flush());
      if (progress) progress(k + 1, runs->size());
    }
  }
  return out;
}

}  // namespace kstacklab::store
