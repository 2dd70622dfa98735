import { closest } from "fastest-levenshtein";
import { didYouMean } from "../errors/did-you-mean.js";
import type { z } from "zod";
import { DomainError, type ErrorDetail } from "../errors/domain-error.js";

/** Where the checked value came from, so each problem can name its place. */
export interface ValueOrigin {
  /** What the value is, for the headline: "server.yaml", "model file qwen.yaml", "request body". */
  readonly label: string;
  /** Prepended to every path: ["models", 2] when the value is one entry of a list. */
  readonly pathPrefix?: readonly PropertyKey[];
  /** Finds a file position for a path, when the value came from a file. */
  readonly locate?: (path: readonly PropertyKey[], key?: string) => string | undefined;
}

/** `models[2].profiles[0].gpus`; a control character in a key (a NUL in an env name) is shown escaped, never raw. */
export function formatPath(path: readonly PropertyKey[]): string {
  let text = "";
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else {
      // eslint-disable-next-line no-control-regex -- control characters are what this finds, on purpose
      const shown = String(segment).replace(/[\u0000-\u001f\u007f]/g, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`);
      text += text.length === 0 ? shown : `.${shown}`;
    }
  }
  return text;
}

/**
 * Zod's issues as one line, "path: message; path: message", for the errors
 * that carry no details list (a state file, an engine's answer, a config.json).
 * The one formatting of issues beside parseWithSchema, so every message names
 * its places alike; `limit` keeps a value with thousands of problems readable.
 */
export function describeIssues(issues: readonly z.core.$ZodIssue[], root = "(top level)", limit = 5): string {
  const shown = issues.slice(0, limit).map((issue) => `${formatPath(issue.path) || root}: ${issue.message}`);
  if (issues.length > limit) shown.push(`and ${issues.length - limit} more`);
  return shown.join("; ");
}

/**
 * Checks `value` against `schema` and returns it typed, or throws one
 * DomainError listing every problem with its place. An unknown key gets the
 * nearest known key as a suggestion, because most unknown keys are typos.
 */
export function parseWithSchema<Schema extends z.ZodType>(schema: Schema, value: unknown, origin: ValueOrigin): z.infer<Schema> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const prefix = origin.pathPrefix ?? [];
  const details: ErrorDetail[] = [];
  let sawUnknownKey = false;
  let problems = 0;
  // Only the first few problems are placed and worded: a file of 50,000 unknown keys printed 4 MB and
  // took seconds to locate each key. The count of the rest is still given.
  const describe = () => details.length < maxDetails;
  for (const issue of result.error.issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === "unrecognized_keys") {
      sawUnknownKey = true;
      problems += issue.keys.length;
      const known = knownKeysAt(schema, issue.path);
      for (const key of issue.keys) {
        if (!describe()) break;
        const shownKey = key.length > 80 ? `${key.slice(0, 80)}…` : key;
        const place = [origin.locate?.(path, key), formatPath([...path, shownKey])].filter(Boolean).join(": ");
        const suggestion = known.length > 0 ? ` (did you mean "${closest(shownKey, known)}"?)` : "";
        details.push({ where: place, message: `unknown key "${shownKey}"${suggestion}; known keys here: ${known.join(", ")}` });
      }
      continue;
    }
    problems += 1;
    if (!describe()) continue;
    const place = [origin.locate?.(path), formatPath(path) || "(top level)"].filter(Boolean).join(": ");
    const missing = issue.code === "invalid_type" && valueAt(value, issue.path) === undefined;
    // A record key that fails its own schema (an env name) carries the key schema's message inside.
    const message = issue.code === "invalid_key" ? (issue.issues[0]?.message ?? issue.message) : issue.message;
    // A value outside a fixed list (an engine, a class) is most often misspelt, as a key is.
    const given = valueAt(value, issue.path);
    const suggestion = issue.code === "invalid_value" && typeof given === "string" ? didYouMean(given, issue.values.filter((known): known is string => typeof known === "string")) : "";
    details.push({ where: place, message: missing ? `required: ${message}` : `${message}${suggestion}` });
  }
  const unlisted = problems - details.length;
  if (unlisted > 0) details.push({ where: "(more)", message: `and ${unlisted} more problem${unlisted === 1 ? "" : "s"} not listed` });
  const first = details[0] as ErrorDetail;
  const more = problems > 1 ? ` (and ${problems - 1} more problem${problems > 2 ? "s" : ""})` : "";
  return throwInvalid(sawUnknownKey && details.length > 0 ? "unknown_key" : "invalid_input", origin, `${first.where}: ${first.message}${more}`, details);
}

/** Problems placed and worded in one error; the rest are counted. */
export const maxDetails = 20;

function throwInvalid(code: "unknown_key" | "invalid_input", origin: ValueOrigin, message: string, details: ErrorDetail[]): never {
  // A file position already names the file; a path alone needs the label to say what it is a path in.
  throw new DomainError(
    code,
    message.startsWith(origin.label) ? message : `${origin.label}: ${message}`,
    `Correct ${details.length > 1 ? "each place listed" : "that place"} in ${origin.label}; nothing was changed.`,
    details,
  );
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value;
  for (const segment of path) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<PropertyKey, unknown>)[segment];
  }
  return current;
}

/**
 * The keys an object schema knows at `path`, walking through arrays,
 * optionals and defaults. Zod's public types do not expose the definition
 * tree generically, so this reads `_zod.def`, which is zod 4's documented
 * internal for exactly this kind of introspection.
 */
function knownKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let current: SchemaNode | undefined = schema as unknown as SchemaNode;
  const unwrap = (node: SchemaNode | undefined): SchemaNode | undefined => {
    let inner = node;
    for (let depth = 0; depth < 10 && inner; depth += 1) {
      const definition: SchemaDefinition = inner._zod.def;
      if (definition.innerType) inner = definition.innerType;
      else if (definition.type === "pipe" && definition.in) inner = definition.in;
      else break;
    }
    return inner;
  };
  for (const segment of path) {
    current = unwrap(current);
    if (!current) return [];
    const definition: SchemaDefinition = current._zod.def;
    if (typeof segment === "number") current = definition.element;
    else current = definition.shape?.[String(segment)];
  }
  current = unwrap(current);
  const shape = current?._zod.def.shape;
  return shape ? Object.keys(shape) : [];
}

interface SchemaDefinition {
  readonly type: string;
  readonly shape?: Record<string, SchemaNode>;
  readonly element?: SchemaNode;
  readonly innerType?: SchemaNode;
  readonly in?: SchemaNode;
}
interface SchemaNode {
  readonly _zod: { readonly def: SchemaDefinition };
}
