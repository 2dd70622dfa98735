import { isMap, isPair, isScalar, Lexer, LineCounter, parseDocument, visit, type Document } from "yaml";
import { DomainError } from "../errors/light.js";

/**
 * A parsed YAML file that can say where a value came from, so schema errors
 * point at `server.yaml:14:9` and not only at `models[0].profiles[0].gpus`.
 */
export interface YamlSource {
  readonly value: unknown;
  /** "file:line:column" of the value (or of the key itself, when `key` is given), if it is in the file. */
  locate(path: readonly PropertyKey[], key?: string): string | undefined;
}

/**
 * The largest server.yaml or model file read. Parsing holds the whole syntax
 * tree, a few hundred bytes of memory per byte of hostile input; a server.yaml
 * of a thousand models is well under this.
 */
export const maxYamlBytes = 1024 * 1024;

/**
 * The deepest nesting of mappings and lists read. The yaml library parses
 * and converts recursively, so a few thousand levels exhaust the stack; a
 * server.yaml is about six levels deep.
 */
export const maxYamlNesting = 64;

const nestingHint = `Write the value with at most ${maxYamlNesting} levels of nested mappings and lists; a server.yaml or model file needs fewer than ten.`;

const yamlHint = "Fix the YAML at that line and column (check indentation, a missing colon, or an unclosed quote or bracket).";

export function parseYamlSource(text: string, fileName: string): YamlSource {
  if (Buffer.byteLength(text) > maxYamlBytes) {
    throw new DomainError(
      "invalid_yaml",
      `${fileName}: the file is ${Buffer.byteLength(text)} bytes, over the ${maxYamlBytes / 1024 / 1024} MiB llmgw reads`,
      "A server.yaml or model file is a few KB; check that this is the right file.",
    );
  }
  refuseAliasesAndDeepFlow(text, fileName);
  const lineCounter = new LineCounter();
  let document: Document;
  try {
    // uniqueKeys is checked below in one pass: the library's own check compares every key with every
    // other, and a file of 50,000 keys took close to a minute.
    document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: false });
  } catch (error) {
    // Nesting deep enough to exhaust the stack, or anything else the library throws rather than reports.
    throw unreadable(fileName, error);
  }
  const firstError = document.errors[0];
  if (firstError?.message.includes("Maximum call stack size exceeded")) throw tooDeep(place(fileName, lineCounter, firstError.pos[0]));
  if (firstError) {
    const where = place(fileName, lineCounter, firstError.pos[0]);
    // The yaml library's messages end with a code frame; the first line is the sentence.
    const sentence = firstError.message.split("\n")[0] ?? firstError.message;
    throw new DomainError("invalid_yaml", `${where}: ${sentence.replace(/ at line \d+, column \d+:?$/, "")}`, yamlHint, [{ where, message: sentence }]);
  }
  refuseDuplicateKeys(document, lineCounter, fileName);
  let value: unknown;
  try {
    value = document.toJS({ maxAliasCount: 0 });
  } catch (error) {
    throw unreadable(fileName, error);
  }
  const deep = deepestPath(value);
  if (deep !== undefined) throw tooDeep(document.getIn(deep, true) ? locateInDocument(document, lineCounter, fileName, deep, undefined) ?? fileName : fileName);
  return {
    value,
    locate(path, key) {
      return locateInDocument(document, lineCounter, fileName, path, key);
    },
  };
}

/**
 * Aliases (`*name`) are refused outright, before the document is built. An
 * entry moves between server.yaml and a model file by copy and paste, and an
 * alias ties it to an anchor that stays behind; and with no aliases there is
 * no expansion to bound ("billion laughs", an alias with no anchor). The
 * lexer finds the first one in one pass with little memory: a token starting
 * with * that is not a scalar's content (those follow the \x1f marker).
 */
function refuseAliasesAndDeepFlow(text: string, fileName: string): void {
  let offset = 0;
  let previous = "";
  // Flow collections ([ and {) are counted here, before the parser recurses into them; block nesting,
  // which costs a line of indentation per level, is measured on the value once it is read.
  let flowDepth = 0;
  for (const token of new Lexer().lex(text)) {
    if (previous !== "\x1f" && (token === "[" || token === "{")) {
      flowDepth += 1;
      if (flowDepth > maxYamlNesting) throw tooDeep(place(fileName, undefined, offset, text));
    } else if (token === "]" || token === "}") flowDepth = Math.max(0, flowDepth - 1);
    if (token.startsWith("*") && previous !== "\x1f") {
      const where = place(fileName, undefined, offset, text);
      throw new DomainError(
        "invalid_yaml",
        `${where}: YAML aliases (${token.slice(0, 40)}) are not accepted`,
        "Write the value out in full where it is used: entries move between server.yaml and model files by copy and paste, and an alias would leave its anchor behind.",
        [{ where, message: `alias ${token.slice(0, 40)}` }],
      );
    }
    // Marker tokens (document start, scalar follows, flow end) are not in the text.
    if (!(token.length === 1 && token < " " && token !== "\n" && token !== "\t" && token !== "\r")) offset += token.length;
    previous = token;
  }
}

/** Two equal keys in one mapping: the second would silently win, so a setting written twice is refused with both places. */
function refuseDuplicateKeys(document: Document, lineCounter: LineCounter, fileName: string): void {
  visit(document, {
    Map(_key, map) {
      const seen = new Map<unknown, number>();
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue;
        const start = pair.key.range?.[0] ?? 0;
        const first = seen.get(pair.key.value);
        if (first !== undefined) {
          const where = place(fileName, lineCounter, start);
          throw new DomainError(
            "invalid_yaml",
            `${where}: key "${String(pair.key.value).slice(0, 80)}" is already set at ${place(fileName, lineCounter, first)}`,
            "Keep one of the two; each key may appear once in a mapping.",
            [{ where, message: `duplicate key "${String(pair.key.value).slice(0, 80)}"` }],
          );
        }
        seen.set(pair.key.value, start);
      }
    },
  });
}

function unreadable(fileName: string, error: unknown): DomainError {
  if (error instanceof RangeError) return tooDeep(fileName);
  const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
  return new DomainError("invalid_yaml", `${fileName}: cannot read the YAML: ${reason}`, yamlHint);
}

function tooDeep(where: string): DomainError {
  return new DomainError("invalid_yaml", `${where}: the YAML is nested more than ${maxYamlNesting} levels deep, the most llmgw reads`, nestingHint, [
    { where, message: `nested more than ${maxYamlNesting} levels` },
  ]);
}

/** The path to a value nested deeper than maxYamlNesting, found without recursion; undefined when none is. */
function deepestPath(root: unknown): (string | number)[] | undefined {
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value: root, path: [] }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    if (item.value === null || typeof item.value !== "object") continue;
    if (item.path.length >= maxYamlNesting) return item.path;
    const entries: [string | number, unknown][] = Array.isArray(item.value) ? item.value.map((value, index) => [index, value]) : Object.entries(item.value);
    for (const [key, value] of entries) stack.push({ value, path: [...item.path, key] });
  }
  return undefined;
}

function place(fileName: string, lineCounter: LineCounter | undefined, offset: number, text?: string): string {
  if (lineCounter) {
    const position = lineCounter.linePos(offset);
    return `${fileName}:${position.line}:${position.col}`;
  }
  const before = (text ?? "").slice(0, offset);
  const line = before.split("\n").length;
  return `${fileName}:${line}:${offset - before.lastIndexOf("\n")}`;
}

function locateInDocument(
  document: Document,
  lineCounter: LineCounter,
  fileName: string,
  path: readonly PropertyKey[],
  key: string | undefined,
): string | undefined {
  const segments = path.map((segment) => (typeof segment === "symbol" ? String(segment) : segment));
  let node = document.getIn(segments, true);
  if (key !== undefined && isMap(node)) {
    const pair = node.items.find((item) => isPair(item) && isScalar(item.key) && item.key.value === key);
    node = pair && isPair(pair) ? pair.key : node;
  }
  const range = (node as { range?: [number, number, number] } | undefined)?.range;
  if (!range) return undefined;
  const position = lineCounter.linePos(range[0]);
  return `${fileName}:${position.line}:${position.col}`;
}
