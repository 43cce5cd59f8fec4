// perftracker dump FILE: the header, the live slot and every valid record as JSON lines, then a
// summary line with what was read and what was skipped.
#include "analyzer/commands/cli.h"
#include "analyzer/commands/command_line.h"
#include "analyzer/base/json_window.h"

namespace perftracker::analyzer {

using json = Json;

namespace {

// Strings from input files may hold any bytes: invalid UTF-8 is replaced, never thrown on.
std::string Line(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

int DumpCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string file;
  CommandLine cl("dump",
                 "Print a ring file as JSON lines: its header, live slot and every valid record, "
                 "then a summary line.");
  cl.Argument("FILE", &file, "a ring file (*.ptr)");
  if (const auto code = cl.Parse(args, out, err)) return *code;
  format::RingReader reader;
  std::string error;
  if (reader.OpenFile(file, &error) != format::ReadStatus::kOk) {
    err << "perftracker: " << error << "\n";
    return kExitUsage;
  }
  const format::RingContents& c = reader.contents();
  json header = {{"type", "header"}};
  header.update(ToJson(c.identity));
  header["format_version"] = c.format_version;
  header["file_size"] = c.file_size;
  header["data_capacity"] = c.data_capacity;
  out << Line(header) << "\n";
  json live = {{"type", "live"}, {"valid", c.live.has_value()}};
  if (c.live) {
    live.update(ToJson(*c.live));
    format::Window open;
    if (format::DecodeOpenWindow(*c.live, &open)) live["open_window"] = ToJson(open);
  }
  out << Line(live) << "\n";

  uint64_t undecodable = 0;
  reader.ForEachRecord([&](uint64_t seq, std::span<const uint8_t> bytes) {
    format::Window window;
    if (!format::DecodeWindow(bytes, &window)) {
      ++undecodable;
      return true;
    }
    json record = {{"type", "window"}, {"seq", seq}};
    record.update(ToJson(window));
    out << Line(record) << "\n";
    return true;
  });
  const format::RingStats& s = c.stats;
  const json summary = {{"type", "summary"},
                        {"records_read", s.records_valid - undecodable},
                        {"records_skipped", s.records_corrupt + undecodable},
                        {"seq_gaps", s.seq_gaps},
                        {"duplicates", s.duplicates},
                        {"truncated", s.truncated},
                        {"live_valid", s.live_valid},
                        {"record_bytes", s.record_bytes}};
  out << Line(summary) << "\n";
  return kExitOk;
}

}  // namespace perftracker::analyzer
