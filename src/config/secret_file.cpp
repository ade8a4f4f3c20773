#include "waitroom/config/secret_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace waitroom::config {

namespace {

std::string mode_text(mode_t mode) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
    return buf;
}

// Overwrites bytes that held a secret (through volatile: a plain memset before the memory is
// released may be optimised away). This library does not link OpenSSL's OPENSSL_cleanse.
void wipe(char* p, std::size_t n) {
    volatile char* v = p;
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = 0;
    }
}

std::string too_open(const std::string& path, mode_t mode) {
    if ((mode & (S_IRWXG | S_IRWXO)) == 0) {
        return {};
    }
    return path + " has mode " + mode_text(mode) +
           ": a secret file must not be open to its group or others (chmod 600 " + path + ")";
}

}  // namespace

std::string secret_file_mode_problem(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return {};
    }
    return too_open(path, st.st_mode);
}

bool read_secret_file(const std::string& path, std::string& out, std::string& why) {
    out.clear();
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        why = "cannot read " + path + ": " + std::strerror(errno);
        return false;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        why = "cannot read " + path + ": " + std::strerror(errno);
        ::close(fd);
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        why = path + " is not a regular file";
        ::close(fd);
        return false;
    }
    if (auto problem = too_open(path, st.st_mode); !problem.empty()) {
        why = std::move(problem);
        ::close(fd);
        return false;
    }
    char buf[512];
    // Reserved up front, so that no reallocation leaves a copy of the secret behind.
    out.reserve(max_secret_file_size + sizeof buf);
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            why = "cannot read " + path + ": " + std::strerror(errno);
            ::close(fd);
            wipe(out.data(), out.size());
            out.clear();
            return false;
        }
        if (n == 0) {
            break;
        }
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > max_secret_file_size) {
            why = path + " is too large to hold a secret (over " +
                  std::to_string(max_secret_file_size) + " bytes)";
            ::close(fd);
            wipe(out.data(), out.size());
            out.clear();
            wipe(buf, sizeof buf);
            return false;
        }
    }
    ::close(fd);
    wipe(buf, sizeof buf);
    return true;
}

}  // namespace waitroom::config
