// The renderers of a Report (verdict/report.h): one file each.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

#include "analyzer/base/json_window.h"
#include "analyzer/verdict/report.h"

namespace perftracker::analyzer {

void WriteText(const Report& report, size_t top, std::ostream& out);  // report_text.cpp
Json ReportJson(const Report& report, size_t top);                     // report_json.cpp
void WriteHtml(const Report& report, size_t top, std::ostream& out);  // report_html.cpp

// Whether a host-time candidate's charge (evidence.host_critical_path.reached_s_per_iter) was
// measured, at the peers' waits or on the loop's thread, rather than estimated from the device's
// queue: the reports then say it cost the job, not that it reached the critical path.
bool ChargeMeasured(const Json& evidence);  // report_json.cpp

// Strings from input files may hold any bytes.
std::string JsonText(const Json& j, int indent);
std::string HtmlEscape(std::string_view s);

}  // namespace perftracker::analyzer
