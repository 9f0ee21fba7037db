// `results import` on arbitrary bytes: a document the loader accepts is stored (one
// transaction), listed, and exported back byte-identical to what ResultToJson writes.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "kstacklab/results/result_reader.h"
#include "kstacklab/store/store.h"

namespace {

const std::string& StorePathOnce() {
  static const std::string path = [] {
    char dir[] = "/tmp/kstacklab-fuzz-store-XXXXXX";
    if (::mkdtemp(dir) == nullptr) std::abort();
    return std::string(dir) + "/results.db";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kstacklab;  // NOLINT(google-build-using-namespace): fuzz entry point
  auto r = ResultFromJson(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!r.ok()) return 0;
  auto store = store::ResultStore::Open(StorePathOnce(), store::ResultStore::Mode::kCreate);
  if (!store.ok()) std::abort();
  auto ids = store->InsertAll({*r, *r});
  if (!ids.ok() || ids->size() != 2) std::abort();
  auto doc = store->Document(ids->back());
  if (!doc.ok() || *doc != ResultToJson(*r)) std::abort();
  auto info = store->Info(ids->front());
  if (!info.ok() || info->label != r->label) std::abort();
  auto back = store->Get(ids->front());
  if (!back.ok()) std::abort();
  return 0;
}
