// The JSON value type of every kstacklab document (result files, the environment capture):
// nlohmann::ordered_json, so keys keep the documented order when written.
#pragma once

#include <nlohmann/json.hpp>

namespace kstacklab {

using Json = nlohmann::ordered_json;

}  // namespace kstacklab
