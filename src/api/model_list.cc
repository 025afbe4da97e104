#include "api/model_list.h"

#include <nlohmann/json.hpp>

namespace pagoda::api {

nlohmann::json ModelList::ToJson() const {
  nlohmann::json data_json = nlohmann::json::array();
  for (const ModelCard& m : data) {
    nlohmann::json card{{"id", m.id}, {"object", "model"}, {"created", m.created}, {"owned_by", m.owned_by}};
    if (m.max_model_len) card["max_model_len"] = *m.max_model_len;
    data_json.push_back(std::move(card));
  }
  return nlohmann::json{{"object", "list"}, {"data", std::move(data_json)}};
}

}  // namespace pagoda::api
