#include "kstacklab/results/results.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "kstacklab/common/fileio.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/results/result_reader.h"

namespace kstacklab {
namespace {

RunResult Sample() {
  RunResult r;
  r.tool_version = "0.1.0";
  r.created = "2026-11-29T12:00:00Z";
  r.label = "v6.18 rnd-on";
  r.environment = Json{{"kernel", {{"release", "6.18.0"}}}};
  r.run.iterations = 1000;
  r.timer = TimerInfo{"tsc", 2.1e9, 26.5, true, std::nullopt};
  BenchmarkResult b;
  b.name = "syscall/getpid";
  b.params = Json{{"h", 1}};
  b.variant = "percpu-prng";
  Repetition rep;
  rep.iterations = 1000;
  rep.session = 1;
  rep.metrics = {{"mean", 101.25}, {"p99", 180.5}, {"p99.9", 250.0}};
  b.repetitions.push_back(rep);
  b.histogram.Record(127500);
  b.histogram.Record(5000000);
  r.benchmarks.push_back(b);
  return r;
}

TEST(Results, JsonRoundTrip) {
  RunResult r = Sample();
  std::string text = ResultToJson(r);
  auto back = ResultFromJson(text, "mem");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(ResultToJson(*back), text);  // byte-identical after a round trip
  EXPECT_EQ(back->label, "v6.18 rnd-on");
  EXPECT_EQ(back->benchmarks[0].variant, "percpu-prng");
  EXPECT_EQ(back->benchmarks[0].repetitions[0].session, 1);
  EXPECT_DOUBLE_EQ(back->benchmarks[0].repetitions[0].metrics.at("p99.9"), 250.0);
  EXPECT_EQ(back->benchmarks[0].histogram.count(), 2u);
  EXPECT_EQ(back->benchmarks[0].histogram.max(), 5000000u);
  EXPECT_DOUBLE_EQ(back->timer.overhead_ns, 26.5);
}

// The run object: typed where code reads it, and every file written back as it was read — keys
// of other versions and values of another JSON type kept, in their order.
TEST(Results, RunContextIsTypedAndWrittenBackAsRead) {
  RunContext c;
  c.iterations = 50000;
  c.cpu = -1;
  c.suites = std::vector<std::string>{};
  c.stall_threshold_ns = 10000;
  c.warnings = {"a warning"};
  EXPECT_EQ(RunContextToJson(c).dump(),
            R"({"iterations":50000,"cpu":-1,"suites":[],"stall_threshold_ns":10000.0,)"
            R"("warnings":["a warning"]})");
  // As another version or tool may have written it: a key this one does not know first, a
  // float written as an integer, a count of another type, an empty list not written here.
  const std::string odd =
      R"({"host":"x","stall_threshold_ns":500,"iterations":"many","params":[],"cpu":3,)"
      R"("ab":["sysctl:kernel.stack_erasing=0,1"],"campaign":{"boot":2}})";
  RunContext read = RunContextFromJson(Json::parse(odd));
  EXPECT_EQ(read.stall_threshold_ns, 500.0);
  EXPECT_FALSE(read.iterations.has_value());  // not a count: kept as read, not typed
  EXPECT_EQ(read.cpu, 3);
  EXPECT_TRUE(read.params.empty());
  EXPECT_EQ(read.ab, (std::vector<std::string>{"sysctl:kernel.stack_erasing=0,1"}));
  EXPECT_EQ(read.campaign["boot"], 2);
  EXPECT_EQ(RunContextToJson(read).dump(), odd);
  // A field set on what was read is written in its place, a new one after the rest.
  read.cpu = 1;
  read.campaign = Json{{"boot", 3}};
  read.order = "interleaved";
  EXPECT_EQ(RunContextToJson(read).dump(),
            R"({"host":"x","stall_threshold_ns":500,"iterations":"many","params":[],"cpu":1,)"
            R"("ab":["sysctl:kernel.stack_erasing=0,1"],"campaign":{"boot":3},)"
            R"("order":"interleaved"})");
  // Through a whole file.
  RunResult r = Sample();
  r.run = RunContextFromJson(Json::parse(odd));
  auto back = ResultFromJson(ResultToJson(r), "odd");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(ResultToJson(*back), ResultToJson(r));
  EXPECT_EQ(ResultToJsonValue(*back)["run"].dump(), odd);
}

TEST(Results, TimerResolutionStallsAndBaselineRoundTripAndAreOptional) {
  RunResult r = Sample();
  // A file without them (written before they existed) loads them as unknown.
  auto old = ResultFromJson(ResultToJson(r), "old");
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->timer.resolution_ns.has_value());
  EXPECT_FALSE(old->benchmarks[0].repetitions[0].stalls.has_value());
  EXPECT_FALSE(old->benchmarks[0].baseline);
  Json j = ResultToJsonValue(r);
  EXPECT_FALSE(j["timer"].contains("resolution_ns"));
  EXPECT_FALSE(j["benchmarks"][0].contains("baseline"));  // written only when true
  r.timer.resolution_ns = 10.02;
  r.benchmarks[0].baseline = true;
  r.benchmarks[0].repetitions[0].stalls = 3;
  r.benchmarks[0].repetitions[0].stall_ns = 61234.5;
  j = ResultToJsonValue(r);
  EXPECT_EQ(j["benchmarks"][0]["repetitions"][0]["stalls"], 3);
  auto back = ResultFromJson(j.dump(), "new");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_DOUBLE_EQ(*back->timer.resolution_ns, 10.02);
  EXPECT_TRUE(back->benchmarks[0].baseline);
  const Repetition& rep = back->benchmarks[0].repetitions[0];
  EXPECT_EQ(*rep.stalls, 3u);
  EXPECT_DOUBLE_EQ(*rep.stall_ns, 61234.5);
  EXPECT_EQ(rep.metrics.count("stalls"), 0u);  // not mistaken for a metric
  j["benchmarks"][0]["repetitions"][0]["stalls"] = -1;
  EXPECT_FALSE(ResultFromJson(j.dump(), "bad").ok());
}

// The shape `compare` orders runs by: exactly what UtcTimestamp() writes, nothing near it.
// One entry per benchmark, params and variant: a repeated one (pooled by every
// reader before) is refused, naming both entries.
TEST(Results, DuplicateBenchmarkEntriesAreRefused) {
  RunResult r = Sample();
  r.benchmarks.push_back(r.benchmarks[0]);
  auto back = ResultFromJson(ResultToJson(r), "dup.json");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.error().exit_code, kExitUsage);
  EXPECT_NE(back.error().message.find("benchmarks[1]"), std::string::npos) << back.error().message;
  EXPECT_NE(back.error().message.find("repeats benchmarks[0] (syscall/getpid(h:1):percpu-prng)"),
            std::string::npos)
      << back.error().message;
  r.benchmarks[1].variant = "off";  // another variant: a row of its own
  EXPECT_TRUE(ResultFromJson(ResultToJson(r), "two.json").ok());
}

// Params are normalised when read: keys sorted, a string holding a plain decimal
// integer read as the integer ({"h":"0"} is {"h":0}); other strings are kept.
TEST(Results, ParamsAreNormalisedWhenRead) {
  RunResult r = Sample();
  r.benchmarks[0].params = Json::parse(R"({"z":"0","a":"-12","s":"256M","p":"007","b":true})");
  auto back = ResultFromJson(ResultToJson(r), "p.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->benchmarks[0].params.dump(), R"({"a":-12,"b":true,"p":"007","s":"256M","z":0})");
  // {"h":"1"} and {"h":1} in one file are then the same entry: refused as a duplicate.
  r = Sample();
  r.benchmarks.push_back(r.benchmarks[0]);
  r.benchmarks[1].params = Json{{"h", "1"}};
  EXPECT_FALSE(ResultFromJson(ResultToJson(r), "h.json").ok());
}

// A label holding ':' (compare's LABEL:VARIANT separator) or an invisible or
// bidirectional character is refused by run; the loader refuses the latter in any text field.
TEST(Results, LabelsThatMislead) {
  EXPECT_FALSE(LabelProblem("rnd-on").has_value());
  ASSERT_TRUE(LabelProblem("a:raw").has_value());
  EXPECT_NE(LabelProblem("a:raw")->find("LABEL:VARIANT"), std::string::npos);
  EXPECT_TRUE(LabelProblem("a\u200bb").has_value());
  RunResult r = Sample();
  r.label = "on\u202e";
  EXPECT_FALSE(ResultFromJson(ResultToJson(r), "bidi.json").ok());
  r.label = "old:label";  // files written before keep loading
  EXPECT_TRUE(ResultFromJson(ResultToJson(r), "colon.json").ok());
}

TEST(Results, UtcTimestampShape) {
  EXPECT_TRUE(IsUtcTimestamp(UtcTimestamp()));
  EXPECT_TRUE(IsUtcTimestamp("2026-11-30T23:40:01Z"));
  for (const char* bad :
       {"", "2026-11-30T23:40:01", "2026-11-30 23:40:01Z", "2026-11-30T23:40:01+00:00",
        "2026-11-30T23:4a:01Z", "02026-11-30T23:40:01Z", "2026-11-30T23:40:01Z\n"}) {
    EXPECT_FALSE(IsUtcTimestamp(bad)) << bad;
  }
}

TEST(Results, SchemaFieldsPresent) {
  Json j = ResultToJsonValue(Sample());
  EXPECT_EQ(j["schema"], "kstacklab-result/1");
  for (const char* k : {"tool_version", "created", "label", "environment", "timer", "benchmarks"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  const Json& b = j["benchmarks"][0];
  for (const char* k : {"name", "params", "unit", "lower_is_better", "repetitions", "histogram"}) {
    EXPECT_TRUE(b.contains(k)) << k;
  }
  EXPECT_EQ(b["unit"], "ns");
}

TEST(Results, MalformedJsonNamesFileAndPosition) {
  auto r = ResultFromJson("{\"schema\": \"kstacklab-result/1\", \"benchmarks\": [", "f.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, kExitUsage);
  EXPECT_NE(r.error().message.find("f.json"), std::string::npos);
  EXPECT_NE(r.error().message.find("at byte"), std::string::npos);
}

TEST(Results, UnknownSchemaVersionIsNamed) {
  auto r = ResultFromJson(R"({"schema": "kstacklab-result/9", "benchmarks": []})", "f.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("kstacklab-result/9"), std::string::npos);
}

TEST(Results, NonFiniteOrWrongTypedMetricIsRejectedWithItsField) {
  Json j = ResultToJsonValue(Sample());
  j["benchmarks"][0]["repetitions"][0]["p99"] = "NaN";
  auto r = ResultFromJson(j.dump(), "f.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("repetitions[0].p99"), std::string::npos) << r.error().message;
  // Non-standard JSON NaN literals are a parse error.
  auto r2 = ResultFromJson(
      R"({"schema":"kstacklab-result/1","benchmarks":[{"name":"a","unit":"ns","repetitions":[{"iterations":1,"mean":NaN}]}]})",
      "g.json");
  EXPECT_FALSE(r2.ok());
}

TEST(Results, MissingFieldsAreNamed) {
  auto r = ResultFromJson(
      R"({"schema":"kstacklab-result/1","benchmarks":[{"name":"a","repetitions":[]}]})", "f.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unit"), std::string::npos);
}

TEST(Results, ParamsTextAndConfigurationName) {
  EXPECT_EQ(ParamsText(Json{{"p", 1}, {"h", 0}}), "p:1, h:0");
  EXPECT_EQ(ParamsText(Json::object()), "");
  EXPECT_EQ(BenchmarkLabel("pkeys/update", "n:256", "batched"), "pkeys/update n:256 [batched]");
  EXPECT_EQ(BenchmarkLabel("syscall/getpid", ""), "syscall/getpid");
  EXPECT_EQ(BenchmarkLabel("model/kstack", "", "off"), "model/kstack [off]");
  EXPECT_EQ(ResultClass("syscall/getpid", "", "mean", "ns", false), "mean (ns)");
  EXPECT_EQ(ResultClass("syscall/getpid", "", "p99", "ns", true), "p99 (ns)");
  EXPECT_EQ(ResultClass("syscall/fork", "h:1", "mean", "ns", false), "fork: h:1 (ns)");
  EXPECT_EQ(ResultClass("syscall/fork", "h:1", "p99", "ns", true), "fork: h:1 p99 (ns)");
  EXPECT_EQ(ResultClass("fork", "h:1", "mean", "ns", false), "fork: h:1 (ns)");
  RunResult r = Sample();
  EXPECT_EQ(ConfigurationName(r, r.benchmarks[0]), "v6.18 rnd-on:percpu-prng");
}

TEST(FileIo, AtomicWriteLeavesNoTempFiles) {
  std::string dir = ::testing::TempDir() + "/kstacklab-fileio";
  std::string cmd = "rm -rf '" + dir + "' && mkdir -p '" + dir + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::string path = dir + "/out.json";
  ASSERT_TRUE(WriteFileAtomic(path, "hello\n").ok());
  auto text = ReadWholeFile(path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "hello\n");
  std::string count_cmd = "test $(ls -A '" + dir + "' | wc -l) -eq 1";
  EXPECT_EQ(std::system(count_cmd.c_str()), 0);
  EXPECT_FALSE(WriteFileAtomic("/nonexistent-dir/x.json", "x").ok());
  EXPECT_FALSE(CheckWritable("/nonexistent-dir/x.json").ok());
  EXPECT_TRUE(CheckWritable(path).ok());
  auto missing = ReadWholeFile(dir + "/missing.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().exit_code, kExitUsage);
}

}  // namespace
}  // namespace kstacklab

namespace kstacklab {
namespace {
TEST(Results, OverflowingNumberIsAUsageErrorNotACrash) {
  auto r = ResultFromJson(
      R"({"schema":"kstacklab-result/1","benchmarks":[{"name":"a","unit":"ns","repetitions":[{"iterations":1,"mean":1e999}]}]})",
      "big.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, kExitUsage);
  EXPECT_NE(r.error().message.find("big.json"), std::string::npos);
}

// Hostile result files are refused (exit 2, naming the field), never a crash.
Json SampleJson() { return Json::parse(ResultToJson(Sample())); }

std::string Refusal(const Json& j) {
  auto r = ResultFromJson(j.dump(), "f");
  if (r.ok()) return "accepted";
  EXPECT_EQ(r.error().exit_code, kExitUsage);
  return r.error().message;
}

TEST(ResultLimits, DeepNestingIsRefusedBeforeParsing) {
  std::string text = ResultToJson(Sample());
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  text.replace(text.find("\"h\": 1"), 6, "\"h\": " + deep);
  auto r = ResultFromJson(text, "deep.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nested more than 32 levels"), std::string::npos);
  // Brackets inside strings do not count.
  Json j = SampleJson();
  j["environment"]["note"] = std::string(1000, '[');
  EXPECT_EQ(Refusal(j), "accepted");
}

TEST(ResultLimits, FileSizeIsBounded) {
  std::string big(ResultLimits::kMaxFileBytes + 1, ' ');
  auto r = ResultFromJson(big, "big.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("bytes, more than"), std::string::npos);
}

// min/max must be values the buckets hold (a hand-edited 0/0 printed p50..max as -20 ns; a max
// beyond every bucket printed 1.8e16); timer.resolution_ns is bounded like the overhead.
TEST(ResultLimits, HistogramMinMaxAgreeWithBucketsAndResolutionIsBounded) {
  Json j = SampleJson();
  j["benchmarks"][0]["histogram"]["min"] = 0;
  j["benchmarks"][0]["histogram"]["max"] = 0;
  EXPECT_NE(Refusal(j).find("histogram.min' (0) is not in the lowest bucket"), std::string::npos)
      << Refusal(j);
  j = SampleJson();
  j["benchmarks"][0]["histogram"]["max"] = UINT64_MAX;
  EXPECT_NE(Refusal(j).find("is not in the highest bucket or the overflow"), std::string::npos)
      << Refusal(j);
  j = SampleJson();
  j["timer"]["resolution_ns"] = -1e308;
  EXPECT_NE(Refusal(j).find("resolution_ns"), std::string::npos) << Refusal(j);
  EXPECT_TRUE(ResultFromJson(SampleJson().dump(), "ok.json").ok());
}

TEST(ResultLimits, HistogramLayoutAndCounts) {
  Json j = SampleJson();
  j["benchmarks"][0]["histogram"]["sub_bucket_bits"] = 20;
  j["benchmarks"][0]["histogram"]["max_value_bits"] = 63;
  EXPECT_NE(Refusal(j).find("histogram.sub_bucket_bits' must be in [2, 11]"), std::string::npos)
      << Refusal(j);
  j = SampleJson();
  j["benchmarks"][0]["histogram"]["max_value_bits"] = 63;
  EXPECT_NE(Refusal(j).find("max_value_bits"), std::string::npos);
  j = SampleJson();
  j["benchmarks"][0]["histogram"]["min"] = 10000000;
  EXPECT_NE(Refusal(j).find("histogram.min' (10000000) is above max"), std::string::npos)
      << Refusal(j);
  j = SampleJson();
  j["benchmarks"][0]["histogram"]["count"] = 3;
  EXPECT_NE(Refusal(j).find("histogram.count' is 3 but the buckets and overflow hold 2"),
            std::string::npos)
      << Refusal(j);
  j = SampleJson();
  j["benchmarks"][0]["histogram"]["count"] = -2;
  EXPECT_NE(Refusal(j).find("non-negative"), std::string::npos);
  j = SampleJson();
  j["benchmarks"][0]["histogram"]["overflow"] = UINT64_MAX;
  j["benchmarks"][0]["histogram"].erase("count");
  EXPECT_NE(Refusal(j).find("counts sum past 2^64"), std::string::npos) << Refusal(j);
}

TEST(ResultLimits, NonsenseFieldsAreRefused) {
  Json j = SampleJson();
  j["timer"]["overhead_ns"] = -1e308;
  EXPECT_NE(Refusal(j).find("timer.overhead_ns' must be in [0, 1000000]"), std::string::npos)
      << Refusal(j);
  j = SampleJson();
  j["benchmarks"][0]["repetitions"] = Json::array();
  EXPECT_NE(Refusal(j).find("repetitions' is empty"), std::string::npos) << Refusal(j);
  j = SampleJson();
  j["benchmarks"][0]["repetitions"][0]["iterations"] = 0;
  EXPECT_NE(Refusal(j).find("iterations' must be at least 1"), std::string::npos);
  j = SampleJson();
  j["benchmarks"][0]["timing"] = "sometimes";
  EXPECT_NE(Refusal(j).find("timing"), std::string::npos);
  j = SampleJson();
  j["benchmarks"][0]["params"]["h"] = Json::array({1});
  EXPECT_NE(Refusal(j).find("params.h' must be a number, string or bool"), std::string::npos);
  j = SampleJson();
  j["benchmarks"][0]["params"]["h"] = nullptr;
  EXPECT_NE(Refusal(j).find("params.h' must be a number, string or bool"), std::string::npos);
  // Limits that keep sums and rates meaningful (2^64 - 1 iterations would wrap the sums).
  j = SampleJson();
  j["benchmarks"][0]["repetitions"][0]["iterations"] = ResultLimits::kMaxIterations + 1;
  EXPECT_NE(Refusal(j).find("iterations' must be at most"), std::string::npos) << Refusal(j);
  j = SampleJson();
  j["benchmarks"][0]["repetitions"][0]["stall_ns"] = -5.0;
  EXPECT_NE(Refusal(j).find("stall_ns' must be at least 0"), std::string::npos) << Refusal(j);
  j = SampleJson();
  j["environment"] = Json::array();
  EXPECT_NE(Refusal(j).find("'environment' must be an object"), std::string::npos) << Refusal(j);
  j = SampleJson();
  Json many = Json::array();
  for (size_t i = 0; i <= ResultLimits::kMaxBenchmarks; ++i) many.push_back(j["benchmarks"][0]);
  j["benchmarks"] = many;
  EXPECT_NE(Refusal(j).find("more than the 512 accepted"), std::string::npos);
}

TEST(ResultLimits, LabelsAndNamesMustBePrintableUtf8) {
  for (const char* key : {"label"}) {
    Json j = SampleJson();
    j[key] = std::string("a\0b", 3);
    EXPECT_NE(Refusal(j).find("field 'label' contains the control character U+0000 at offset 1"),
              std::string::npos)
        << Refusal(j);
    j[key] = "a\nb";
    EXPECT_NE(Refusal(j).find("U+000A"), std::string::npos);
    j[key] = "\x1b[31mred";
    EXPECT_NE(Refusal(j).find("U+001B"), std::string::npos);
  }
  Json j = SampleJson();
  j["benchmarks"][0]["variant"] = "x\ny";
  EXPECT_NE(Refusal(j).find("variant"), std::string::npos);
  j = SampleJson();
  j["benchmarks"][0]["name"] = "x\ty";
  EXPECT_NE(Refusal(j).find("name"), std::string::npos);
  EXPECT_EQ(LabelProblem("b\xe9se").value_or(""), "is not valid UTF-8 (byte 0xe9 at offset 1)");
  EXPECT_FALSE(LabelProblem("6.18 rnd-on \xc3\xa9").has_value());  // UTF-8 is fine
}

TEST(ResultLimits, WritingNeverThrowsOnInvalidUtf8) {
  RunResult r = Sample();
  r.environment["odd"] = "b\xe9se";  // e.g. a host name read from a garbled file
  std::string text;
  EXPECT_NO_THROW(text = ResultToJson(r));
  EXPECT_NE(text.find("b\xef\xbf\xbdse"), std::string::npos);  // U+FFFD
  EXPECT_TRUE(ResultFromJson(text, "mem").ok());
}

}  // namespace
}  // namespace kstacklab
