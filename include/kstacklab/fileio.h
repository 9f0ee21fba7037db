// Whole-file I/O with the guarantees the CLI promises: reads report the path and errno text;
// writes are atomic (temp file in the same directory + fsync + rename), so a reader never sees
// a half-written file and an interrupted write leaves the old file (or nothing) in place.
#pragma once

#include <string>

#include "kstacklab/error.h"

namespace kstacklab {

// Reads a whole file. Missing/unreadable -> UsageError naming the path (the user gave it).
Expected<std::string> ReadWholeFile(const std::string& path);

// Writes `content` atomically to `path`; "-" writes to stdout. On failure nothing is left behind.
Status WriteFileAtomic(const std::string& path, const std::string& content);

// Checks, before any measurement, that `path` can be created: its directory exists and is
// writable. Creates and removes a probe file; leaves nothing behind. "-" is always writable.
Status CheckWritable(const std::string& path);

}  // namespace kstacklab
