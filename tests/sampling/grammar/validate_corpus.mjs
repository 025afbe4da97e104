// Independent check of the JSON Schema -> grammar converter: validates every
// string the grammar produced (random walks, json_schema_corpus.cc) with ajv
// against its schema, and checks each corpus file's hand-written instances
// (every "valid" one validates, every "invalid" one does not).
//
// usage: node validate_corpus.mjs OUTPUTS.json
//   OUTPUTS.json: [{"file": "<path of a schemas/*.json>", "outputs": ["<text>", ...]}, ...]
// Prints one line per failure and a summary; exits 1 on any failure. Schemas
// that declare draft-07 in $schema use ajv's draft-07 class, the rest 2020-12.
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const options = { allErrors: true, strict: true, strictTuples: false, strictTypes: false,
                  strictRequired: false };
const validators = {
  draft7: addFormats(new Ajv(options)),
  draft2020: addFormats(new Ajv2020(options)),
};

const entries = JSON.parse(readFileSync(process.argv[2], "utf8"));
let failures = 0;
let outputs = 0;
let instances = 0;
const fail = (file, what) => {
  failures++;
  console.log(`FAIL ${file}: ${what}`);
};

for (const entry of entries) {
  const doc = JSON.parse(readFileSync(entry.file, "utf8"));
  const draft = String(doc.schema?.$schema ?? "").includes("draft-07") ? "draft7" : "draft2020";
  let validate;
  try {
    validate = validators[draft].compile(doc.schema);
  } catch (e) {
    fail(entry.file, `ajv cannot compile the schema: ${e.message}`);
    continue;
  }
  const name = entry.file.split("/").pop();
  for (const text of entry.outputs) {
    outputs++;
    let value;
    try {
      value = JSON.parse(text);
    } catch (e) {
      fail(name, `output is not JSON (${e.message}): ${JSON.stringify(text)}`);
      continue;
    }
    if (!validate(value)) {
      fail(name, `output does not validate: ${JSON.stringify(text)} ${JSON.stringify(validate.errors)}`);
    }
  }
  for (const v of doc.valid ?? []) {
    instances++;
    if (!validate(v)) fail(name, `"valid" instance does not validate: ${JSON.stringify(v)}`);
  }
  for (const v of doc.invalid ?? []) {
    instances++;
    if (validate(v)) fail(name, `"invalid" instance validates: ${JSON.stringify(v)}`);
  }
}
console.log(`ajv: ${entries.length} schemas, ${outputs} generated outputs, ${instances} hand-written instances, ` +
            `${failures} failures`);
process.exit(failures === 0 ? 0 : 1);
