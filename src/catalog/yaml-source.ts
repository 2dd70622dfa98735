import { isMap, isPair, isScalar, LineCounter, parseDocument, type Document } from "yaml";
import { DomainError } from "../errors/domain-error.js";

/**
 * A parsed YAML file that can say where a value came from, so schema errors
 * point at `server.yaml:14:9` and not only at `models[0].profiles[0].gpus`.
 */
export interface YamlSource {
  readonly value: unknown;
  /** "file:line:column" of the value (or of the key itself, when `key` is given), if it is in the file. */
  locate(path: readonly PropertyKey[], key?: string): string | undefined;
}

export function parseYamlSource(text: string, fileName: string): YamlSource {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const firstError = document.errors[0];
  if (firstError) {
    const position = lineCounter.linePos(firstError.pos[0]);
    const where = `${fileName}:${position.line}:${position.col}`;
    // The yaml library's messages end with a code frame; the first line is the sentence.
    const sentence = firstError.message.split("\n")[0] ?? firstError.message;
    throw new DomainError(
      "invalid_yaml",
      `${where}: ${sentence.replace(/ at line \d+, column \d+:?$/, "")}`,
      "Fix the YAML at that line and column (check indentation, a missing colon, or an unclosed quote or bracket).",
      [{ where, message: sentence }],
    );
  }
  return {
    value: document.toJS({ maxAliasCount: 100 }),
    locate(path, key) {
      return locateInDocument(document, lineCounter, fileName, path, key);
    },
  };
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
