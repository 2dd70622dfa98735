import { writeFileSync } from "node:fs";
import type { Reporter, TestCase } from "vitest/node";
import { batteryTable, failureReason, type BatteryCell } from "./battery-table.js";
import "./battery.js";

/**
 * A vitest reporter that prints the client battery's table (client × row ×
 * engine: pass, refused in shape, or fail with why) when the run ends, and
 * writes it to the file LLMGW_CLIENT_TABLE names, if set:
 *   npx vitest run --project clients --reporter=default --reporter=./test/clients/table-reporter.ts
 */
export default class BatteryTableReporter implements Reporter {
  readonly #cells: BatteryCell[] = [];

  onTestCaseResult(testCase: TestCase): void {
    const meta = testCase.meta().battery;
    if (meta === undefined) return;
    const result = testCase.result();
    const outcome = result.state === "passed" ? (meta.outcome ?? "pass") : result.state === "failed" ? `fail: ${failureReason(result.errors?.[0]?.message)}` : result.state;
    this.#cells.push({ client: meta.client, feature: meta.feature, engine: meta.engine, outcome });
  }

  onTestRunEnd(): void {
    if (this.#cells.length === 0) return;
    const table = batteryTable(this.#cells);
    process.stdout.write(`\nWhat the official clients get (test/clients):\n\n${table}\n`);
    const file = process.env.LLMGW_CLIENT_TABLE;
    if (file) writeFileSync(file, `${table}\n`);
  }
}
