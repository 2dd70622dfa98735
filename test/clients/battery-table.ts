import type { BatteryEngine } from "./battery-server.js";

/** One row's result on one engine, as the table shows it. */
export interface BatteryCell {
  readonly client: string;
  readonly feature: string;
  readonly engine: BatteryEngine;
  /** "pass", "refused (PARAM)", or "fail: WHY". */
  readonly outcome: string;
}

const engineColumns: readonly { readonly engine: BatteryEngine; readonly title: string }[] = [
  { engine: "sim", title: "simulated engine" },
  { engine: "llama", title: "built-in llama.cpp" },
];

/** Why a row failed, short enough for a table cell: the error's first line, without the client's prefixes. */
export function failureReason(message: string | undefined): string {
  const line = (message ?? "failed").split("\n")[0] ?? "failed";
  const short = line.replace(/\s+/g, " ").trim();
  return short.length > 90 ? `${short.slice(0, 87)}...` : short;
}

/** The battery's results as a Markdown table: a line per (client, feature), a column per engine, in the order they ran. */
export function batteryTable(cells: readonly BatteryCell[]): string {
  const order: string[] = [];
  const byRow = new Map<string, Map<BatteryEngine, string>>();
  for (const cell of cells) {
    const key = `${cell.client}\u0000${cell.feature}`;
    if (!byRow.has(key)) {
      order.push(key);
      byRow.set(key, new Map());
    }
    byRow.get(key)?.set(cell.engine, cell.outcome.replace(/\|/g, "\\|"));
  }
  const header = `| Client | Row | ${engineColumns.map((column) => column.title).join(" | ")} |`;
  const rule = `|---|---|${engineColumns.map(() => "---").join("|")}|`;
  const lines = order.map((key) => {
    const [client, feature] = key.split("\u0000");
    const outcomes = engineColumns.map((column) => byRow.get(key)?.get(column.engine) ?? "not run");
    return `| ${client} | ${feature} | ${outcomes.join(" | ")} |`;
  });
  const counts = engineColumns.map((column) => {
    const outcomes = cells.filter((cell) => cell.engine === column.engine).map((cell) => cell.outcome);
    if (outcomes.length === 0) return undefined;
    const passed = outcomes.filter((outcome) => outcome === "pass").length;
    const refused = outcomes.filter((outcome) => outcome.startsWith("refused")).length;
    return `${column.title}: ${passed} pass, ${refused} refused in shape, ${outcomes.length - passed - refused} fail of ${outcomes.length}`;
  });
  return [header, rule, ...lines, "", counts.filter((count) => count !== undefined).join("; ")].join("\n");
}
