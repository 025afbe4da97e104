// A small JSON Schema check for the playground's structured-output answers:
// type, required, properties, additionalProperties: false, enum, items,
// minimum/maximum. Enough to show whether the object matches the schema the
// request sent; the server enforces the schema itself (grammar-constrained).

type Schema = Record<string, unknown>;

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeMatches(v: unknown, t: string): boolean {
  const actual = typeOf(v);
  return actual === t || (t === 'number' && actual === 'integer');
}

export function checkSchema(value: unknown, schema: Schema, path = '$'): string[] {
  const problems: string[] = [];
  const t = schema.type;
  if (typeof t === 'string' && !typeMatches(value, t)) return [`${path}: expected ${t}, got ${typeOf(value)}`];
  if (Array.isArray(t) && !t.some(x => typeMatches(value, String(x)))) {
    return [`${path}: expected one of ${t.join(', ')}, got ${typeOf(value)}`];
  }
  if (Array.isArray(schema.enum) && !schema.enum.some(e => JSON.stringify(e) === JSON.stringify(value))) {
    problems.push(`${path}: not one of the enum values`);
  }
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) problems.push(`${path}: below ${schema.minimum}`);
    if (typeof schema.maximum === 'number' && value > schema.maximum) problems.push(`${path}: above ${schema.maximum}`);
  }
  if (typeOf(value) === 'object') {
    const obj = value as Record<string, unknown>;
    const props = (schema.properties ?? {}) as Record<string, Schema>;
    for (const r of (schema.required ?? []) as string[]) if (!(r in obj)) problems.push(`${path}: missing "${r}"`);
    for (const [k, v] of Object.entries(obj)) {
      if (props[k]) problems.push(...checkSchema(v, props[k], `${path}.${k}`));
      else if (schema.additionalProperties === false) problems.push(`${path}: unexpected "${k}"`);
    }
  }
  if (Array.isArray(value) && schema.items && typeof schema.items === 'object') {
    value.forEach((x, i) => problems.push(...checkSchema(x, schema.items as Schema, `${path}[${i}]`)));
  }
  return problems;
}
