// Writes reference lines (JSON texts) to OUT as JSONL: to a temporary file
// first, then renamed, so a reader never sees a half-written file.
"use strict";
const fs = require("fs");
const path = require("path");

function WriteJsonLines(out, lines) {
  fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  const tmp = `${out}.tmp${process.pid}`;
  fs.writeFileSync(tmp, lines.join("\n") + "\n");
  fs.renameSync(tmp, out);
}

module.exports = { WriteJsonLines };
