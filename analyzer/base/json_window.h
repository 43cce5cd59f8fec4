// JSON views of the format's values, shared by dump and the reports.
#pragma once

#include <nlohmann/json.hpp>

#include "schemas/format/live.h"
#include "schemas/format/ring_file.h"
#include "schemas/format/window.h"

namespace perftracker::analyzer {

// Keys stay in the order written: "type" first, then identity, then numbers.
using Json = nlohmann::ordered_json;

Json ToJson(const format::Histogram& h);
Json ToJson(const format::Window& w);
Json ToJson(const format::LiveState& s);
Json ToJson(const format::Identity& id);

}  // namespace perftracker::analyzer
