// A JSON value written as block YAML, for the submit page's editor (a job's spec, cloned). Only what a job spec
// holds: mappings, lists and scalars. A string stays plain only when YAML reads it back as the same text;
// otherwise it is written as a JSON string, which YAML reads as a double-quoted scalar.

const PLAIN = /^[A-Za-z0-9_./+][A-Za-z0-9_./+=@ -]*$/;
const NUMBER_LIKE = /^[-+]?(\.?\d)/;
const WORDS = new Set(['true', 'false', 'null', 'yes', 'no', 'on', 'off', 'y', 'n', '~']);

function scalar(v: unknown): string {
  if (typeof v === 'string') {
    const plain = PLAIN.test(v) && !v.endsWith(' ') && !WORDS.has(v.toLowerCase()) &&
      (!NUMBER_LIKE.test(v) || /[A-Za-z]$/.test(v));
    return plain ? v : JSON.stringify(v);
  }
  if (v === null || v === undefined) return 'null';
  return String(v);
}

const isScalar = (v: unknown) => v === null || typeof v !== 'object';

function lines(v: unknown, indent: string, keyOrder: string[]): string[] {
  const out: string[] = [];
  if (Array.isArray(v)) {
    for (const item of v) {
      if (isScalar(item)) out.push(`${indent}- ${scalar(item)}`);
      else {
        const inner = lines(item, `${indent}  `, []);
        out.push(`${indent}- ${inner[0].trimStart()}`, ...inner.slice(1));
      }
    }
    return out;
  }
  const obj = v as Record<string, unknown>;
  const keys = Object.keys(obj).sort((a, b) => {
    const ia = keyOrder.indexOf(a), ib = keyOrder.indexOf(b);
    return (ia < 0 ? keyOrder.length : ia) - (ib < 0 ? keyOrder.length : ib);
  });
  for (const key of keys) {
    const value = obj[key];
    const k = scalar(key);
    if (isScalar(value)) out.push(`${indent}${k}: ${scalar(value)}`);
    else if (Array.isArray(value) && value.length === 0) out.push(`${indent}${k}: []`);
    else if (Array.isArray(value) && value.every(isScalar)) out.push(`${indent}${k}: [${value.map(scalar).join(', ')}]`);
    else if (!Array.isArray(value) && Object.keys(value as object).length === 0) out.push(`${indent}${k}: {}`);
    else out.push(`${indent}${k}:`, ...lines(value, `${indent}  `, []));
  }
  return out;
}

// `keyOrder`: the top-level keys to write first, in this order (the rest follow as the value has them).
export function toYaml(value: unknown, keyOrder: string[] = []): string {
  if (isScalar(value)) return `${scalar(value)}\n`;
  return `${lines(value, '', keyOrder).join('\n')}\n`;
}
