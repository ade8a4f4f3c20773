// The one translation unit that holds Asio's, Asio SSL's and Beast's compiled code, so the
// rest of the project includes only their declarations (separate compilation).
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
