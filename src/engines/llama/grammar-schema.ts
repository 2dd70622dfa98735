/**
 * JSON schemas as node-llama-cpp's JSON-schema grammar takes them. The
 * grammar builds every answer to match the schema, so it must understand
 * every keyword that constrains a value: a keyword it would skip (pattern,
 * minimum, allOf...) would let through answers the schema forbids, and the
 * request is refused instead, naming the keyword and where it is.
 */
export type GrammarSchemaResult = { readonly schema: Record<string, unknown> } | { readonly problem: string };

/** Keywords that constrain nothing: they are dropped before the grammar sees the schema. */
const annotations = new Set(["title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated", "readOnly", "writeOnly"]);

const constraining = new Set([
  "type",
  "const",
  "enum",
  "oneOf",
  "anyOf",
  "properties",
  "required",
  "additionalProperties",
  "minProperties",
  "maxProperties",
  "items",
  "prefixItems",
  "minItems",
  "maxItems",
  "minLength",
  "maxLength",
  "format",
  "$ref",
  "$defs",
]);

const simpleTypes = new Set(["string", "number", "integer", "boolean", "null"]);
const formats = new Set(["date-time", "time", "date"]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function convert(schema: unknown, where: string): Record<string, unknown> {
  if (schema === true || (isRecord(schema) && Object.keys(schema).every((key) => annotations.has(key)))) {
    throw new Error(`${where} allows any value, which the grammar cannot build; give it a type`);
  }
  if (!isRecord(schema)) throw new Error(`${where} is not a JSON schema object`);
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (annotations.has(key)) continue;
    if (!constraining.has(key)) throw new Error(`${where} uses "${key}", which the built-in engine's JSON grammar cannot enforce; remove it or serve the model with llama-server`);
    switch (key) {
      case "type":
        if (Array.isArray(value) ? !value.every((item) => simpleTypes.has(String(item))) : !(simpleTypes.has(String(value)) || value === "object" || value === "array")) {
          throw new Error(`${where}.type is ${JSON.stringify(value)}; a list of types may hold only string, number, integer, boolean and null`);
        }
        result.type = value;
        break;
      case "format":
        if (!formats.has(String(value))) throw new Error(`${where}.format "${String(value)}" is not one the grammar builds (date-time, time, date)`);
        result.format = value;
        break;
      case "$ref":
        if (typeof value !== "string" || !value.startsWith("#/$defs/")) throw new Error(`${where}.$ref must point into #/$defs/`);
        result.$ref = value;
        break;
      case "oneOf":
      case "anyOf": {
        // Any answer built from one branch satisfies anyOf, so anyOf becomes the grammar's oneOf.
        if (!Array.isArray(value) || value.length === 0) throw new Error(`${where}.${key} must be a non-empty list of schemas`);
        result.oneOf = value.map((branch, index) => convert(branch, `${where}.${key}[${index}]`));
        break;
      }
      case "properties":
      case "$defs": {
        if (!isRecord(value)) throw new Error(`${where}.${key} must be an object`);
        result[key] = Object.fromEntries(Object.entries(value).map(([name, inner]) => [name, convert(inner, `${where}.${key}.${name}`)]));
        break;
      }
      case "items":
        result.items = convert(value, `${where}.items`);
        break;
      case "prefixItems":
        if (!Array.isArray(value)) throw new Error(`${where}.prefixItems must be a list of schemas`);
        result.prefixItems = value.map((item, index) => convert(item, `${where}.prefixItems[${index}]`));
        break;
      case "additionalProperties":
        result.additionalProperties = typeof value === "boolean" ? value : convert(value, `${where}.additionalProperties`);
        break;
      default:
        result[key] = value;
    }
  }
  if ("oneOf" in result && Object.keys(result).some((key) => key !== "oneOf" && key !== "$defs")) {
    throw new Error(`${where} combines ${"anyOf" in schema ? "anyOf" : "oneOf"} with other keywords; move them into each branch`);
  }
  return result;
}

/** The schema the grammar is built from, or why it cannot be. `where` names the schema in the request ("response_format.json_schema.schema"). */
export function grammarSchema(schema: unknown, where: string): GrammarSchemaResult {
  try {
    return { schema: convert(schema, where) };
  } catch (error) {
    return { problem: error instanceof Error ? error.message : String(error) };
  }
}
