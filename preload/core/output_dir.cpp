#include "preload/core/output_dir.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>

namespace perftracker::preload {
namespace {

// Symbolic links followed in one walk, as the kernel's own bound on a path lookup.
constexpr int kMaxLinks = 40;

bool Trusted(const struct stat& st) { return st.st_uid == geteuid() || st.st_uid == 0; }

std::string Join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

void Split(const std::string& path, std::deque<std::string>* out, bool front) {
  std::deque<std::string> parts;
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t end = std::min(path.find('/', pos), path.size());
    if (end > pos) parts.push_back(path.substr(pos, end - pos));
    pos = end + 1;
  }
  if (front) {
    out->insert(out->begin(), parts.begin(), parts.end());
  } else {
    out->insert(out->end(), parts.begin(), parts.end());
  }
}

// A directory someone else controls could have its entries replaced under us.
bool CheckDir(int fd, const std::string& where, std::string* error) {
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    *error = "cannot stat " + where + ": " + std::strerror(errno);
    return false;
  }
  if (!Trusted(st)) {
    *error = where + " belongs to uid " + std::to_string(st.st_uid) + ", not to us or root";
    return false;
  }
  if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0) {
    *error = where + " is writable by others and has no sticky bit";
    return false;
  }
  return true;
}

std::string Sanitize(std::string s) {
  for (char& c : s) {
    if (c == '/' || c == '\0' || (c == '.' && s.size() <= 2)) c = '_';
  }
  return s.empty() ? "unknown" : s;
}

// Walks `path` from `/`; returns the open directory or -1 and *error.
int Walk(const std::string& path, std::string* error) {
  std::deque<std::string> rest;
  if (path.empty() || path[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == nullptr) {
      *error = std::string("cannot resolve the current directory: ") + std::strerror(errno);
      return -1;
    }
    Split(cwd, &rest, false);
  }
  Split(path, &rest, false);
  std::string where = "/";
  int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || !CheckDir(fd, where, error)) {
    if (fd >= 0) close(fd);
    if (error->empty()) *error = "cannot open /";
    return -1;
  }
  int links = 0;
  auto fail = [&](std::string message) {
    close(fd);
    *error = std::move(message);
    return -1;
  };
  while (!rest.empty()) {
    const std::string name = rest.front();
    rest.pop_front();
    if (name == ".") continue;
    if (name == "..") return fail(path + ": '..' in the path is not followed");
    const std::string next_where = Join(where, name);
    struct stat st {};
    if (fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) return fail("cannot stat " + next_where + ": " + std::strerror(errno));
      if (mkdirat(fd, name.c_str(), 0750) != 0 && errno != EEXIST) {
        return fail("cannot create directory " + next_where + ": " + std::strerror(errno));
      }
    } else if (S_ISLNK(st.st_mode)) {
      if (!Trusted(st)) {
        return fail(next_where + " is a symbolic link owned by uid " + std::to_string(st.st_uid));
      }
      char target[PATH_MAX];
      const ssize_t n = readlinkat(fd, name.c_str(), target, sizeof target - 1);
      if (n <= 0 || ++links > kMaxLinks) return fail("cannot follow " + next_where);
      target[n] = '\0';
      Split(target, &rest, true);
      if (target[0] == '/') {
        const int root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0) return fail("cannot open /");
        close(fd);
        fd = root;
        where = "/";
      }
      continue;
    }
    const int next = openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      return fail(next_where + (errno == ELOOP || errno == ENOTDIR
                                    ? " is not a directory (or was replaced while we looked)"
                                    : ": " + std::string(std::strerror(errno))));
    }
    close(fd);
    fd = next;
    where = next_where;
    if (!CheckDir(fd, where, error)) {
      close(fd);
      return -1;
    }
  }
  return fd;
}

}  // namespace

OutputDir OpenSafeDir(const std::string& path) {
  OutputDir out;
  out.path = path;
  out.fd = Walk(path, &out.error);
  return out;
}

OutputDir OpenOutputDir(const Config& config, const format::Identity& identity) {
  std::string root;
  if (config.dir != nullptr && *config.dir) {
    root = config.dir;
  } else {
    const char* tmp = std::getenv("TMPDIR");
    root = std::string(tmp && *tmp ? tmp : "/tmp") + "/perftracker-" + std::to_string(geteuid());
  }
  return OpenSafeDir(root + "/" + Sanitize(identity.job_id) + "/" + Sanitize(identity.hostname));
}

std::string RingFileName(const format::Identity& identity) {
  std::string name = "rank-" + std::to_string(identity.rank);
  if (identity.helper_of != 0) name += ".helper-" + std::to_string(identity.pid);
  return name + ".ptr";
}

}  // namespace perftracker::preload
