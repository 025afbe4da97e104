// The one place that includes Boost.Asio / Beast, for the .cc files of
// src/http only (no public header includes it, so the rest of the tree never
// pays Beast's compile time).
// Boost 1.74 with g++ 12 in C++20: boost/asio/awaitable.hpp uses
// std::exchange without including <utility>; include it first.
#pragma once

#include <utility>

#include <boost/asio.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace pagoda::http::internal {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;
}  // namespace pagoda::http::internal
