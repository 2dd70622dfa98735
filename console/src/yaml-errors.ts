import { LineCounter, parseDocument } from "yaml";
import type { ErrorDetail } from "./api.ts";

export interface PlacedError {
  readonly line: number;
  readonly column: number;
  readonly where: string;
  readonly message: string;
}

/** `profiles[0].gpus` → ["profiles", 0, "gpus"]: the server's place names in an entry. */
export function pathOf(where: string): (string | number)[] {
  return [...where.matchAll(/([^.[\]]+)|\[(\d+)\]/g)].map((match) => (match[2] !== undefined ? Number(match[2]) : (match[1] as string)));
}

export interface ParsedYaml {
  readonly value: unknown;
  /** Syntax errors, with their line and column. */
  readonly errors: readonly PlacedError[];
  /** Puts a server's detail (a path in the entry) on the line and column where that field is written; the nearest written parent when it is missing. */
  readonly place: (detail: ErrorDetail) => PlacedError;
}

export function parseYaml(text: string): ParsedYaml {
  const lines = new LineCounter();
  const document = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const errors = document.errors.map((error) => {
    const position = lines.linePos(error.pos[0]);
    return { line: position.line, column: position.col, where: "YAML", message: error.message.split("\n")[0] ?? error.message };
  });
  const place = (detail: ErrorDetail): PlacedError => {
    const path = pathOf(detail.where);
    for (let length = path.length; length > 0; length -= 1) {
      const node = document.getIn(path.slice(0, length), true) as { range?: [number, number, number] } | undefined;
      if (node && typeof node === "object" && node.range) {
        const position = lines.linePos(node.range[0]);
        return { line: position.line, column: position.col, where: detail.where, message: detail.message };
      }
    }
    return { line: 1, column: 1, where: detail.where, message: detail.message };
  };
  return { value: errors.length === 0 ? document.toJS() : null, errors, place };
}
