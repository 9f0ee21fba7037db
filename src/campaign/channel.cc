// The guest's data channel (base64 files between markers, read in pieces under the caps of
// channel.h), the cpio "newc" writer of the guest's initramfs, and the head-and-tail cap of a
// log: the pieces the engines share, apart from any one engine.
#include "kstacklab/campaign/channel.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <utility>

#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"

namespace kstacklab::campaign {
namespace {

namespace fs = std::filesystem;

std::string Hex8(uint64_t v) { return fmt::format("{:08X}", v & 0xFFFFFFFFu); }

// The value of one base64 symbol (RFC 4648 alphabet), or -1.
int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::string CpioNewc(const std::vector<CpioEntry>& entries) {
  std::string out;
  uint64_t ino = 1;
  auto pad4 = [&out] { out.resize((out.size() + 3) & ~size_t{3}, '\0'); };
  auto record = [&](const std::string& name, uint32_t mode, const std::string& data) {
    // magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor,
    // rdevminor, namesize (with its NUL), check: 13 fields of 8 hex digits after "070701".
    out += "070701";
    out += Hex8(ino++) + Hex8(mode) + Hex8(0) + Hex8(0) + Hex8(S_ISDIR(mode) ? 2 : 1) + Hex8(0) +
           Hex8(data.size()) + Hex8(0) + Hex8(0) + Hex8(0) + Hex8(0) + Hex8(name.size() + 1) +
           Hex8(0);
    out += name;
    out += '\0';
    pad4();
    out += data;
    pad4();
  };
  for (const CpioEntry& e : entries) record(e.path, e.mode, e.data);
  record("TRAILER!!!", 0, "");
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  int pad = 0;
  size_t symbols = 0;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    ++symbols;
    if (c == '=') {
      ++pad;
      continue;
    }
    const int v = Base64Value(c);
    if (v < 0 || pad > 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  if (symbols % 4 != 0 || pad > 2) return std::nullopt;
  return out;
}

void HeadTail::Append(std::string_view bytes) {
  total_ += bytes.size();
  if (head_.size() < half_) {
    const size_t take = std::min(bytes.size(), half_ - head_.size());
    head_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
  }
  tail_.append(bytes);
  if (tail_.size() > 2 * half_ + 65536) tail_.erase(0, tail_.size() - half_);
}

std::string CutMarker(uint64_t cut, uint64_t total, size_t cap) {
  return fmt::format(
      "\n[kstacklab: {} of this log's {} bytes were cut here: a log over its cap of {} bytes "
      "keeps its start and its end (docs/campaign.md \"Caps\")]\n",
      cut, total, cap);
}

std::string HeadTail::Text() const {
  if (!cut()) return head_ + tail_;
  const std::string_view tail = std::string_view(tail_).substr(tail_.size() - half_);
  return head_ + CutMarker(total_ - head_.size() - tail.size(), total_, 2 * half_) +
         std::string(tail);
}

namespace {

constexpr size_t kMaxMarkerLine = 256;  // longer lines are base64 bodies
bool IsLogFile(const std::string& name) {
  return name == "run.log" || name == "entropy.log" || name == "sysctl.log";
}

}  // namespace

void ChannelReader::Feed(std::string_view text) {
  for (char c : text) {
    if (c == '\n') {
      EndLine();
    } else if (long_line_) {
      if (in_file_) Body(std::string_view(&c, 1));
    } else if (line_.size() < kMaxMarkerLine) {
      line_ += c;
    } else {
      long_line_ = true;
      if (in_file_) Body(line_);
      line_.clear();
      if (in_file_) Body(std::string_view(&c, 1));
    }
  }
}

void ChannelReader::EndLine() {
  if (long_line_) {
    long_line_ = false;
    line_.clear();
    return;
  }
  while (!line_.empty() && (line_.back() == '\r' || line_.back() == ' ')) line_.pop_back();
  constexpr std::string_view kFile = "kstacklab-file ";
  if (line_.rfind(kFile, 0) == 0) {
    BeginFile(line_.substr(kFile.size()));
  } else if (line_ == "kstacklab-end") {
    EndFile();
  } else if (line_ == "kstacklab-done") {
    data_.done = true;
  } else if (in_file_) {
    Body(line_);
  }
  line_.clear();
}

void ChannelReader::BeginFile(const std::string& name) {
  in_file_ = true;
  name_ = name;
  keep_ = std::find(known_.begin(), known_.end(), name) != known_.end();
  acc_ = 0;
  bits_ = 0;
  pad_ = 0;
  symbols_ = 0;
  bad_ = false;
  chunk_.clear();
  whole_.clear();
  over_ = false;
  log_ = IsLogFile(name) ? std::make_unique<HeadTail>(kMaxGuestLogBytes) : nullptr;
}

void ChannelReader::Body(std::string_view text) {
  if (!keep_ || bad_) return;
  for (char c : text) {
    if (c == ' ' || c == '\r' || c == '\t') continue;
    ++symbols_;
    if (c == '=') {
      ++pad_;
      continue;
    }
    const int v = Base64Value(c);
    if (v < 0 || pad_ > 0) {
      bad_ = true;
      return;
    }
    acc_ = (acc_ << 6) | static_cast<uint32_t>(v);
    bits_ += 6;
    if (bits_ >= 8) {
      bits_ -= 8;
      chunk_ += static_cast<char>((acc_ >> bits_) & 0xFF);
    }
  }
  if (log_) {
    log_->Append(chunk_);
  } else if (!over_) {
    over_ = whole_.size() + chunk_.size() > kMaxGuestFileBytes;
    if (over_) {
      whole_.clear();
      whole_.shrink_to_fit();
    } else {
      whole_ += chunk_;
    }
  }
  chunk_.clear();
}

void ChannelReader::EndFile() {
  if (in_file_ && keep_ && !bad_ && symbols_ % 4 == 0 && pad_ <= 2) {
    if (log_) {
      if (log_->cut()) {
        data_.cut.push_back(
            {name_, false, log_->total(), kMaxGuestLogBytes / 2, kMaxGuestLogBytes});
      }
      data_.files[name_] = log_->Text();
    } else if (over_) {
      data_.files.erase(name_);
      data_.cut.push_back({name_, true, 0, 0, kMaxGuestFileBytes});
    } else {
      data_.files[name_] = std::move(whole_);
    }
  }
  in_file_ = false;
  keep_ = false;
  log_.reset();
  whole_.clear();
}

ChannelData ChannelReader::Finish() {
  if (!line_.empty() || long_line_) EndLine();
  return std::move(data_);
}

ChannelData ParseChannel(const std::string& text, const std::vector<std::string>& known) {
  ChannelReader reader(known);
  reader.Feed(text);
  return reader.Finish();
}

Expected<ChannelData> ParseChannelFile(const std::string& path,
                                       const std::vector<std::string>& known) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return RuntimeError(fmt::format("cannot read '{}': {}", EscapeControl(path), strerror(errno)));
  }
  ChannelReader reader(known);
  std::string buf(size_t{1} << 16, '\0');
  for (;;) {
    const ssize_t got = read(fd, buf.data(), buf.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    reader.Feed(std::string_view(buf.data(), static_cast<size_t>(got)));
  }
  close(fd);
  return reader.Finish();
}

std::optional<CappedFile> CapFile(const std::string& path, size_t cap) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec || size <= cap) return std::nullopt;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  const size_t half = (cap - 1024) / 2;  // the kept text and the marker stay within the cap
  std::string head(half, '\0');
  std::string tail(half, '\0');
  const bool ok =
      pread(fd, head.data(), half, 0) == static_cast<ssize_t>(half) &&
      pread(fd, tail.data(), half, static_cast<off_t>(size - half)) == static_cast<ssize_t>(half);
  close(fd);
  if (!ok || !WriteFileAtomic(path, head + CutMarker(size - 2 * half, size, cap) + tail).ok()) {
    return std::nullopt;
  }
  return CappedFile{path, size, half, cap};
}

}  // namespace kstacklab::campaign
