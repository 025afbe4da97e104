// TlsFiles: where an https server's certificate and private key live (PEM),
// and the check that they load. No Boost or OpenSSL type appears here.
#pragma once

#include <string>

#include "base/status.h"

namespace pagoda::http {

struct TlsFiles {
  std::string cert_file;  // PEM: the server's certificate, then its chain (intermediates)
  std::string key_file;   // PEM: the certificate's private key, unencrypted
  // Either set: the server speaks TLS (then both must be).
  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

// Loads both files as the server would and discards them: the startup check.
// Errors name the file at fault: unreadable, not PEM, an encrypted key, a key
// that does not match the certificate, or only one of the two set.
Status CheckTlsFiles(const TlsFiles& files);

}  // namespace pagoda::http
