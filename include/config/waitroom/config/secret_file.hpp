#pragma once
// Reading the small secret files a configuration names: cookie keys (`cookie.keys[].secret_file`,
// the generated `cookie.key_file`) and the admin token (`admin.token_file`).
//
// A secret file that its group or others may read or write is refused, as OpenSSH refuses such
// a private key: whoever reads a cookie key can mint admission cookies for every room, whoever
// reads the admin token can suspend them, and a warning in a log scrolls by unread. The check is
// made on the open descriptor (fstat), so the file judged is the file read.

#include <cstddef>
#include <string>

namespace waitroom::config {

// Longest secret file read; a wrong path (a device, a log) is refused rather than slurped.
inline constexpr std::size_t max_secret_file_size = 4096;

// What is wrong with the mode of the secret file at `path` ("" when nothing is, or when there is
// no such file: reading it reports that). Lets the config loader refuse a file that is too open
// with the file:line:column of the setting, before anything reads it.
std::string secret_file_mode_problem(const std::string& path);

// Reads `path` whole into `out`. On failure returns false and says why in `why`, naming the
// path and, when the file is too open, its mode and the fix. Never echoes the content.
bool read_secret_file(const std::string& path, std::string& out, std::string& why);

}  // namespace waitroom::config
