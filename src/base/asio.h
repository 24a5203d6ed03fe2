// The one place Boost.Asio is included. Boost 1.74's awaitable.hpp uses std::exchange
// without including <utility>, which g++ 12 in C++20 mode rejects; include it first.
#pragma once

#include <utility>

#include <boost/asio.hpp>

namespace coll {
namespace asio = boost::asio;
using tcp = boost::asio::ip::tcp;
}  // namespace coll
