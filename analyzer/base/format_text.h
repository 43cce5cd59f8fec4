// Numbers as the reports write them. Here, not in report/, because verdicts write sentences too
// (a signal's "SM clock 1,523 MHz vs peers 1,980 MHz").
#pragma once

#include <string>

namespace perftracker::analyzer {

std::string FormatSeconds(double s);                  // "12.3 ms", "1.20 s", "850 us"
std::string FormatNumber(const char* fmt, double v);  // one number, printf-style

}  // namespace perftracker::analyzer
