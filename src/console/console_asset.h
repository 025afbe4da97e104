// ConsoleAsset: one file of the web console (web/, built by Vite into
// web/dist), embedded in the binary at build time by cmake/EmbedConsole.cmake
// as a generated source. Where web/dist was not built the embedded set is a
// single index.html saying how to build it (ConsoleBuilt() is false).
// The data is static and immutable: any thread.
#pragma once

#include <span>
#include <string_view>

namespace pagoda::console {

struct ConsoleAsset {
  std::string_view path;          // URL path: "/index.html", "/assets/index-3f2a.js"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view etag;          // quoted content hash: "\"5c1e...\""
  std::span<const unsigned char> data;
  bool immutable = false;         // content-hashed name (assets/): cached for a year
};

// Every embedded file (generated).
std::span<const ConsoleAsset> EmbeddedConsoleAssets();
// False when web/dist was absent at build time (generated).
bool ConsoleBuilt();

}  // namespace pagoda::console
