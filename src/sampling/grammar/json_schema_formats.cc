#include "sampling/grammar/json_schema_formats.h"

namespace pagoda::grammar {

namespace {

using Rules = std::vector<std::pair<std::string, std::string>>;

// Years 0000-9999; February 29 only in leap years (divisible by 4, and by 400
// for a century), as ajv checks.
void AddDate(const std::string& p, Rules* rules) {
  rules->push_back({p + "date",
                    p + "year \"-\" " + p + "month-day | " + p + "leap-year \"-02-29\""});
  rules->push_back({p + "year", "[0-9]{4}"});
  rules->push_back({p + "leap-year",
                    "[0-9] [0-9] (\"0\" [48] | [2468] [048] | [13579] [26]) | "
                    "([02468] [048] | [13579] [26]) \"00\""});
  rules->push_back({p + "month-day",
                    "(\"01\" | \"03\" | \"05\" | \"07\" | \"08\" | \"10\" | \"12\") \"-\" "
                    "(\"0\" [1-9] | [12] [0-9] | \"3\" [01]) | "
                    "(\"04\" | \"06\" | \"09\" | \"11\") \"-\" (\"0\" [1-9] | [12] [0-9] | \"30\") | "
                    "\"02-\" (\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8])"});
}

// hh:mm:ss[.fraction] and a required zone (Z or +hh:mm), no leap seconds.
void AddTime(const std::string& p, Rules* rules) {
  rules->push_back({p + "time",
                    "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] "
                    "(\".\" [0-9]{1,9})? (\"Z\" | [+\\x2D] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])"});
}

}  // namespace

std::optional<Rules> FormatRules(const std::string& format, const std::string& prefix) {
  const std::string p = prefix + "-";
  Rules rules;
  if (format == "date") {
    AddDate(p, &rules);
  } else if (format == "time") {
    AddTime(p, &rules);
  } else if (format == "date-time") {
    rules.push_back({p + "date-time", p + "date \"T\" " + p + "time"});
    AddDate(p, &rules);
    AddTime(p, &rules);
  } else if (format == "uuid") {
    rules.push_back({p + "uuid",
                     p + "hex{8} \"-\" " + p + "hex{4} \"-\" " + p + "hex{4} \"-\" " + p +
                         "hex{4} \"-\" " + p + "hex{12}"});
    rules.push_back({p + "hex", "[0-9a-fA-F]"});
  } else if (format == "email") {
    // local@domain: dot-separated atoms, dot-separated labels (at least two),
    // ASCII only; each piece at most 63 characters so outputs stay bounded.
    rules.push_back({p + "email", p + "email-atom (\".\" " + p + "email-atom){0,7} \"@\" " + p +
                                      "email-label (\".\" " + p + "email-label){1,7}"});
    rules.push_back({p + "email-atom", "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~\\x2D]{1,63}"});
    rules.push_back({p + "email-label", "[a-zA-Z0-9] ([a-zA-Z0-9\\x2D]{0,61} [a-zA-Z0-9])?"});
  } else {
    return std::nullopt;
  }
  return rules;
}

const char* SupportedFormats() { return "date, time, date-time, uuid, email"; }

}  // namespace pagoda::grammar
