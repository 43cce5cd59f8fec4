// Where input names hold arbitrary bytes (a ring file's function names are whatever the process
// had), every output format that must be valid UTF-8 (HTML, Prometheus' text format) checks them
// the same way.
#pragma once

#include <cstddef>
#include <string_view>

namespace perftracker::analyzer {

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates,
// nothing past U+10FFFF), 0 when it is not one.
size_t Utf8Length(std::string_view s, size_t i);

}  // namespace perftracker::analyzer
