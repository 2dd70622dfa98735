import { appendFileSync, existsSync, writeFileSync } from "node:fs";
import path from "node:path";

/** One scenario's outcome, as the reliability table shows it. */
export interface ChaosRow {
  readonly scenario: string;
  readonly sent: number;
  readonly succeeded: number;
  readonly failed: number;
  /** Each failure's reason, counted: "connection refused during the outage: 12". */
  readonly reasons: ReadonlyMap<string, number>;
  /** How long until the system served again after the fault, as measured; reported, never asserted. */
  readonly recovery: string;
  readonly notes: string;
}

/**
 * Where `npm run chaos` writes its table: LLMGW_CHAOS_REPORT, or chaos-report.md
 * where it runs. The quick part inside `npm test` only prints its rows.
 */
export const chaosReportFile = process.env.LLMGW_CHAOS === "1" ? (process.env.LLMGW_CHAOS_REPORT ?? path.resolve("chaos-report.md")) : undefined;

const header = "| scenario | sent | succeeded | failed | failures by reason | time to recover | notes |\n| --- | ---: | ---: | ---: | --- | --- | --- |\n";

/** Appends the row to the report (starting it with the table's header) and prints it. */
export function reportChaos(row: ChaosRow): void {
  const reasons = [...row.reasons].map(([reason, count]) => `${reason}: ${count}`).join("; ") || "none";
  const line = `| ${row.scenario} | ${row.sent} | ${row.succeeded} | ${row.failed} | ${reasons} | ${row.recovery} | ${row.notes} |\n`;
  if (chaosReportFile !== undefined) {
    if (!existsSync(chaosReportFile)) writeFileSync(chaosReportFile, header);
    appendFileSync(chaosReportFile, line);
  }
  process.stdout.write(`\nchaos${chaosReportFile ? ` (${chaosReportFile})` : ""}:\n${header}${line}`);
}

/** Counts failures by reason. */
export class FailureCounter {
  readonly reasons = new Map<string, number>();
  count(reason: string): void {
    this.reasons.set(reason, (this.reasons.get(reason) ?? 0) + 1);
  }
  get total(): number {
    return [...this.reasons.values()].reduce((sum, count) => sum + count, 0);
  }
}
