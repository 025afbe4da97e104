// What the node load generators under bench/ share: flag parsing, a seeded
// splitmix64 (reproducible prompts without dependencies) and a quantile.

// --key value / --flag (true) pairs; anything else is an error.
export function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; ++i) {
    if (!argv[i].startsWith('--')) throw new Error(`unexpected argument ${argv[i]}`);
    const eq = argv[i].indexOf('=');
    if (eq > 2) {  // --key=value: a value that may itself start with --
      out[argv[i].slice(2, eq)] = argv[i].slice(eq + 1);
      continue;
    }
    const key = argv[i].slice(2);
    if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) out[key] = argv[++i];
    else out[key] = true;
  }
  return out;
}

// A splitmix64 generator from state `state` (a BigInt): each call returns
// the next 64-bit value as a BigInt.
export function splitMix64(state) {
  let s = state;
  return () => {
    s = (s + 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
    let z = s;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & 0xffffffffffffffffn;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & 0xffffffffffffffffn;
    return z ^ (z >> 31n);
  };
}

// The q-quantile (0..1) of xs, nearest rank; null when empty.
export function quantile(xs, q) {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * (s.length - 1) + 0.5))];
}
