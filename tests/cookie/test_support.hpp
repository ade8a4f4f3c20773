#pragma once
// Shared helpers of the cookie tests: fixed key rings and a private temporary folder.

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "waitroom/cookie/key_ring.hpp"

namespace waitroom::cookie::test {

inline key make_key(std::string id, std::uint8_t fill) {
    key k;
    k.id = std::move(id);
    for (std::size_t i = 0; i < k.secret.size(); ++i) {
        k.secret[i] = static_cast<std::uint8_t>(fill + i);
    }
    return k;
}

inline std::shared_ptr<const key_ring> ring_of(std::vector<key> keys) {
    return std::make_shared<const key_ring>(std::move(keys));
}

// A fresh folder under TMPDIR, removed with everything in it at the end of the test.
class temp_dir {
  public:
    temp_dir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "waitroom-cookie-XXXXXX");
        if (::mkdtemp(tmpl.data()) == nullptr) {
            std::abort();
        }
        path_ = tmpl;
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;

    const std::filesystem::path& path() const { return path_; }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

  private:
    std::filesystem::path path_;
};

}  // namespace waitroom::cookie::test
