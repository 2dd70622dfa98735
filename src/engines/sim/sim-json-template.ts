/**
 * The object a json_object answer follows when the instructions say which
 * keys they want: a model asked for JSON answers with the keys the prompt
 * names. Two forms are read, in the system and user turns, the latest first:
 *
 * - a list after "keys:" (or "key:"), e.g. `Reply in JSON with keys: name, age and city`;
 * - a JSON object shown in the text, e.g. `like {"name": "Ada", "age": 36}`.
 *
 * The result is a JSON schema (the keys, each typed as in the example; a
 * listed key is a string), so the answer is drawn as a json_schema answer is.
 */

const keyList = /\bkeys?\s*:\s*([A-Za-z_][\w-]*(?:(?:\s*,\s*(?:and\s+)?|\s+and\s+)[A-Za-z_][\w-]*)*)/i;
const keySeparator = /\s*,\s*(?:and\s+)?|\s+and\s+/i;

/** The schema of a JSON example: the same keys, the same types. */
function schemaOfExample(value: unknown): unknown {
  if (Array.isArray(value)) return { type: "array", items: value.length > 0 ? schemaOfExample(value[0]) : {} };
  if (value === null) return { type: "null" };
  if (typeof value === "object") return { type: "object", properties: Object.fromEntries(Object.entries(value).map(([key, item]) => [key, schemaOfExample(item)])) };
  if (typeof value === "number") return { type: Number.isInteger(value) ? "integer" : "number" };
  return { type: typeof value };
}

/** The first JSON object written in `text` that has at least one key, if any. */
function firstJsonObject(text: string): Record<string, unknown> | undefined {
  for (let start = text.indexOf("{"); start >= 0; start = text.indexOf("{", start + 1)) {
    let depth = 0;
    for (let end = start; end < text.length; end += 1) {
      if (text[end] === "{") depth += 1;
      else if (text[end] === "}") depth -= 1;
      if (depth > 0) continue;
      try {
        const parsed: unknown = JSON.parse(text.slice(start, end + 1));
        if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) && Object.keys(parsed).length > 0) return parsed as Record<string, unknown>;
      } catch {
        // Not JSON (a brace in prose, a template): look further on.
      }
      break;
    }
  }
  return undefined;
}

/** The schema a json_object answer follows, from the instructions' texts (latest first); undefined when none names keys. */
export function jsonObjectTemplate(instructions: readonly string[]): unknown {
  for (const text of instructions) {
    const listed = keyList.exec(text)?.[1];
    if (listed !== undefined) {
      const keys = listed.split(keySeparator);
      return { type: "object", properties: Object.fromEntries(keys.map((key) => [key, { type: "string" }])) };
    }
    const example = firstJsonObject(text);
    if (example !== undefined) return schemaOfExample(example);
  }
  return undefined;
}
