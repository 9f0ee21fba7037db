#include "kstacklab/results.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "kstacklab/fileio.h"

namespace kstacklab {
namespace {

RunResult Sample() {
  RunResult r;
  r.tool_version = "0.1.0";
  r.created = "2026-11-29T12:00:00Z";
  r.label = "v6.18 rnd-on";
  r.environment = Json{{"kernel", {{"release", "6.18.0"}}}};
  r.run = Json{{"iterations", 1000}};
  r.timer = TimerInfo{"tsc", 2.1e9, 26.5, true};
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
}  // namespace
}  // namespace kstacklab
