#include "model/model_fingerprint.h"

#include <xxhash.h>

#include <algorithm>
#include <memory>
#include <string>

namespace pagoda {
namespace {

struct StateFree {
  void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
};

template <class T>
void AddPod(XXH3_state_t* s, const T& v) {
  XXH3_64bits_update(s, &v, sizeof v);
}

void AddString(XXH3_state_t* s, std::string_view v) {
  AddPod(s, static_cast<uint64_t>(v.size()));
  XXH3_64bits_update(s, v.data(), v.size());
}

}  // namespace

uint64_t ModelFingerprint(const GgufFile& file, std::string_view extra) {
  std::unique_ptr<XXH3_state_t, StateFree> st(XXH3_createState());
  XXH3_state_t* s = st.get();
  XXH3_64bits_reset(s);
  AddString(s, "pagoda.gguf.fingerprint.v1");
  AddPod(s, file.file_size());
  for (const auto& [key, value] : file.metadata().entries()) {
    AddString(s, key);
    AddString(s, value.ToDisplayString());
  }
  constexpr int64_t kSample = 4096;
  for (const GgufTensorInfo& t : file.tensors()) {
    AddString(s, t.name);
    AddPod(s, t.raw_type);
    for (int64_t n : t.ne) AddPod(s, n);
    AddPod(s, t.offset);
    AddPod(s, t.nbytes);
    const TensorView v = file.View(t);
    const auto* data = static_cast<const uint8_t*>(v.data);
    if (data == nullptr || t.nbytes <= 0) continue;
    const int64_t head = std::min(kSample, t.nbytes);
    XXH3_64bits_update(s, data, static_cast<size_t>(head));
    if (t.nbytes > head) {
      const int64_t tail = std::min(kSample, t.nbytes - head);
      XXH3_64bits_update(s, data + t.nbytes - tail, static_cast<size_t>(tail));
    }
  }
  AddString(s, extra);
  return XXH3_64bits_digest(s);
}

}  // namespace pagoda
