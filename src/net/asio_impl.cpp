// The one translation unit that holds Asio's, Asio SSL's and Beast's compiled code, so the
// rest of the project includes only their declarations (separate compilation).

// Beast 1.81's parse_chunk_header asserts that a last chunk seen again holds 5 bytes or more,
// but a client that sends its trailers in reads shorter than that gets there with 4: a Debug
// build would abort on it. What follows the assertion handles that case (it waits for more, as
// release builds do), so the assertions of the code compiled here are off in every build.
#define BOOST_DISABLE_ASSERTS
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
