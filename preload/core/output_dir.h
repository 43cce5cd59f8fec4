// Where a process's ring file goes, opened safely: in a shared /tmp another user can pre-create
// our directories (and read the job's function names and hosts) or plant a symbolic link for us
// to truncate one of our own files through.
//
// The directory $PERFTRACKER_DIR/<job-id>/<hostname> (default root ${TMPDIR:-/tmp}/perftracker-
// $UID) is walked from `/` one component at a time with openat(O_NOFOLLOW):
//   - a missing directory is created, mode 0750 (less where the umask says so);
//   - an existing one must be owned by us or root, and not writable by others unless it has the
//     sticky bit (as /tmp does);
//   - a symbolic link is followed only if it is owned by us or root (the kernel's
//     protected_symlinks rule), and the directories it leads to pass the same checks.
// Anything else: an error naming the component, and the caller records nothing. The ring file
// itself is created in the returned directory descriptor (format::RingWriter::CreateAt).
#pragma once

#include <string>

#include "preload/core/config.h"
#include "schemas/format/ring_file.h"

namespace perftracker::preload {

struct OutputDir {
  int fd = -1;       // the host directory, O_DIRECTORY; -1 on failure
  std::string path;  // for messages and the trigger file
  std::string error;
};

// $PERFTRACKER_DIR (default ${TMPDIR:-/tmp}/perftracker-$UID)/<job-id>/<hostname>, created and
// checked as above.
OutputDir OpenOutputDir(const Config& config, const format::Identity& identity);

// The same for any directory path (tests).
OutputDir OpenSafeDir(const std::string& path);

// rank-<rank>.ptr for a rank, rank-<rank>.helper-<pid>.ptr for a helper process.
std::string RingFileName(const format::Identity& identity);

}  // namespace perftracker::preload
