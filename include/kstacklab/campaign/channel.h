// What the engines share to bring a guest's files back: the data channel (the guest's second
// serial port or an ssh session: base64 files between markers), the caps on what a campaign keeps
// of a boot's logs, and the cpio "newc" writer of a guest's initramfs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/campaign/engine_events.h"
#include "kstacklab/common/error.h"

namespace kstacklab::campaign {

// One file of an initramfs (cpio "newc", the format the kernel unpacks).
struct CpioEntry {
  std::string path;   // without a leading '/': "bin/busybox"
  uint32_t mode = 0;  // type and permission bits (S_IFREG | 0755, S_IFDIR | 0755, S_IFLNK | 0777)
  std::string data;   // contents (the target for a link)
};
// The archive of `entries` with the "TRAILER!!!" record, each header and body padded to 4 bytes.
std::string CpioNewc(const std::vector<CpioEntry>& entries);

// What a campaign keeps of a boot's logs (docs/campaign.md "Caps"). A log over its cap keeps its
// first and last half-cap bytes with a line between them saying how much was cut.
inline constexpr size_t kMaxGuestLogBytes = size_t{1} << 20;  // run.log, entropy.log, sysctl.log
inline constexpr size_t kMaxConsoleBytes = size_t{16} << 20;  // a boot's console log file
// The guest's other files (result.json, env.json, ...) are kept whole up to this, else dropped.
inline constexpr size_t kMaxGuestFileBytes = size_t{64} << 20;

// `total` bytes of a log, of which the first and the last `keep` / 2 are kept, with a line
// between them that says what was cut.
class HeadTail {
 public:
  explicit HeadTail(size_t keep) : half_(keep / 2) {}
  void Append(std::string_view bytes);
  bool cut() const { return total_ > 2 * half_; }
  uint64_t total() const { return total_; }
  std::string Text() const;  // the whole text when not cut

 private:
  size_t half_;
  uint64_t total_ = 0;
  std::string head_;
  std::string tail_;  // the last bytes after the head (trimmed to half_ now and then)
};
// The line HeadTail puts where it cut.
std::string CutMarker(uint64_t cut, uint64_t total, size_t cap);

// Parses the data channel (the guest's second serial port): "kstacklab-file NAME" lines, base64
// bodies, "kstacklab-end", and "kstacklab-done" at the end; CRs ignored. Files before a missing
// "kstacklab-done" are kept (the caller decides). Names outside `known` are dropped. The logs
// (run.log, entropy.log, sysctl.log) are kept to kMaxGuestLogBytes (head and tail), other files
// whole up to kMaxGuestFileBytes or not at all; `cut` says, one per file, what was cut.
struct ChannelData {
  std::map<std::string, std::string> files;
  bool done = false;
  std::vector<GuestFileCut> cut;
};

// The channel read in pieces of any size (memory: the caps above, whatever the text's length).
class ChannelReader {
 public:
  explicit ChannelReader(std::vector<std::string> known) : known_(std::move(known)) {}
  void Feed(std::string_view text);
  ChannelData Finish();  // the data so far (an unterminated last line is read as a line)

 private:
  void EndLine();
  void BeginFile(const std::string& name);
  void EndFile();
  void Body(std::string_view text);

  std::vector<std::string> known_;
  ChannelData data_;
  std::string line_;        // the current line, up to a marker's length
  bool long_line_ = false;  // the current line outgrew line_ (a body line: fed already)
  bool in_file_ = false;
  bool keep_ = false;  // the current file is known
  std::string name_;
  // base64 state of the current file
  uint32_t acc_ = 0;
  int bits_ = 0;
  int pad_ = 0;
  uint64_t symbols_ = 0;
  bool bad_ = false;
  std::string chunk_;  // decoded bytes not yet stored
  std::unique_ptr<HeadTail> log_;
  std::string whole_;
  bool over_ = false;
};
ChannelData ParseChannel(const std::string& text, const std::vector<std::string>& known);
// The channel in the file at `path`, read in 64 KiB pieces. RuntimeError when it cannot be read.
Expected<ChannelData> ParseChannelFile(const std::string& path,
                                       const std::vector<std::string>& known);

// Cuts the file at `path` to its first and last (`cap` - 1 KiB) / 2 bytes with CutMarker between
// them when it is longer than `cap` (written atomically; memory: `cap`; the result is within
// `cap`, so a second call leaves it). Returns what was cut, for the user; nullopt when the file
// was within its cap (or cannot be read).
std::optional<CappedFile> CapFile(const std::string& path, size_t cap);

// Standard base64 (RFC 4648 section 4), whitespace ignored; nullopt on any other character or a
// bad length.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace kstacklab::campaign
