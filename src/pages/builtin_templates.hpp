#pragma once
// The built-in page templates (templates/queue.*.html, templates/reject.*.html), the style they
// share (templates/page.css) and the queue pages' own style and script (templates/queue-page.css,
// queue-page.js), compiled into the binary by src/pages/CMakeLists.txt so the daemon needs no
// template folder at run time.

#include <cstddef>
#include <string_view>

namespace waitroom::pages::builtin {

struct template_text {
    std::string_view name;  // "queue.en-US", "reject.ja-JP", ..., "queue-page.js"
    std::string_view text;
};

extern const template_text templates[];
extern const std::size_t template_count;

}  // namespace waitroom::pages::builtin
