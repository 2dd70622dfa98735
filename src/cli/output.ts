import { asInvoked } from "../llmgw-invocation.js";
/** Prints data as JSON for tools: exactly what the API returned. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** A plain table: a header row and padded columns, wide enough for every cell. */
export function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

export function print(text: string): void {
  // Every command a line quotes names llmgw as it was started (npx llmgw in a clone).
  const line = asInvoked(text);
  process.stdout.write(line.endsWith("\n") ? line : `${line}\n`);
}
